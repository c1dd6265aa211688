/* SPDX-License-Identifier: MIT */
// prog-cxx.cpp - a C++ program for tests/e2e/cxx.sh, whose sync profile must name
// its functions as C++ reads them: two classes with a lock() each (one called,
// one inlined), a method of a class template that waits on a condition
// variable, lambdas run by std::thread, and std::thread::join.
//
// Four workers take items from a queue: each item locks the Table, then the
// Journal, holding each for 200 us, so that workers wait on both; between
// bursts of items the queue is empty and they wait in Queue<int>::pop. The
// first burst waits until every worker sleeps (the kernel says so) in an
// empty queue's pop: on a loaded machine the workers might otherwise never
// find the queue empty. The last item keeps a worker busy for 50 ms, so that
// main waits in join.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

#include "asleep.h"

namespace store
{

using std::chrono::microseconds;
using std::chrono::milliseconds;

class Table
{
  public:
    __attribute__((noinline)) void lock()
    {
        mu_.lock();
    }
    void unlock()
    {
        mu_.unlock();
    }

  private:
    std::mutex mu_;
};

class Journal
{
  public:
    __attribute__((always_inline)) inline void lock()
    {
        mu_.lock();
    }
    void unlock()
    {
        mu_.unlock();
    }

  private:
    std::mutex mu_;
};

template <typename T> class Queue
{
  public:
    void push(T v)
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            q_.push_back(v);
        }
        cv_.notify_one();
    }
    void close()
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            closed_ = true;
        }
        cv_.notify_all();
    }
    // false once the queue is closed and empty.
    __attribute__((noinline)) bool pop(T &out)
    {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [this] { return !q_.empty() || closed_; });
        if (q_.empty())
            return false;
        out = q_.front();
        q_.pop_front();
        return true;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<T> q_;
    bool closed_ = false;
};

} // namespace store

int main()
{
    store::Table table;
    store::Journal journal;
    store::Queue<int> work;
    const int slow = -1; // the last item
    std::vector<std::thread> workers;
    std::atomic<long> tids[4] = {};
    for (int i = 0; i < 4; i++)
        workers.emplace_back([&, i] {
            tids[i] = syscall(SYS_gettid);
            int item;
            while (work.pop(item)) {
                if (item == slow) {
                    std::this_thread::sleep_for(store::milliseconds(50));
                    continue;
                }
                table.lock();
                std::this_thread::sleep_for(store::microseconds(200));
                table.unlock();
                journal.lock();
                std::this_thread::sleep_for(store::microseconds(200));
                journal.unlock();
            }
        });
    for (auto &t : tids)
        while (t == 0 || !ctr_test_is_asleep(getpid(), (int)t))
            std::this_thread::yield();
    for (int burst = 0; burst < 10; burst++) {
        for (int i = 0; i < 8; i++)
            work.push(burst * 8 + i);
        std::this_thread::sleep_for(store::milliseconds(3));
    }
    work.push(slow);
    work.close();
    for (auto &w : workers)
        w.join();
    std::puts("done");
    return 0;
}
