// kdebug's CUDA-on-the-CPU runtime: what a translated CUDA unit (emulate/translate.py) compiles against
// with the host C++ compiler, in place of nvcc and the CUDA runtime.
//
// A launch runs its grid block after block on one OS thread. Within a block, threads run one after the
// other; a unit that synchronises (__syncthreads, warp shuffles and votes, __syncwarp) runs each thread
// as a fiber (ucontext) that yields at every barrier, so shared memory and warp exchanges behave as on a
// GPU whose threads interleave only at barriers. Races between unsynchronised threads therefore never
// show, as in Triton's interpreter. Shared memory is a function-local static (one block at a time),
// dynamic shared memory a per-launch buffer that each block finds full of NaN bytes. An invalid launch
// configuration (more than 1024 threads a block, a grid dimension over its limit, a zero dimension, more
// than 48 KiB of dynamic shared memory without cudaFuncSetAttribute) does not run and sets the error
// cudaGetLastError returns, as on a GPU.
#pragma once

#include <torch/extension.h>
#include <c10/util/Half.h>
#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define KDEBUG_CUDA_EMULATION 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __constant__
#define __managed__
#define __shared__ static
#define __grid_constant__

// ---------------------------------------------------------------------------------------------------
// Built-in vector types
struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

#define KDCPU_VEC(T, N1, N2, N3, N4, A2, A4)                                                               \
    struct N1 { T x; };                                                                                     \
    struct alignas(A2) N2 { T x, y; };                                                                      \
    struct N3 { T x, y, z; };                                                                               \
    struct alignas(A4) N4 { T x, y, z, w; };                                                                \
    inline N1 make_##N1(T x) { return N1{x}; }                                                              \
    inline N2 make_##N2(T x, T y) { return N2{x, y}; }                                                      \
    inline N3 make_##N3(T x, T y, T z) { return N3{x, y, z}; }                                              \
    inline N4 make_##N4(T x, T y, T z, T w) { return N4{x, y, z, w}; }
KDCPU_VEC(float, float1, float2, float3, float4, 8, 16)
KDCPU_VEC(double, double1, double2, double3, double4, 16, 32)
KDCPU_VEC(int, int1, int2, int3, int4, 8, 16)
KDCPU_VEC(unsigned int, uint1, uint2, uint3_, uint4, 8, 16)
KDCPU_VEC(signed char, char1, char2, char3, char4, 2, 4)
KDCPU_VEC(unsigned char, uchar1, uchar2, uchar3, uchar4, 2, 4)
KDCPU_VEC(short, short1, short2, short3, short4, 4, 8)
KDCPU_VEC(unsigned short, ushort1, ushort2, ushort3, ushort4, 4, 8)
KDCPU_VEC(long long, longlong1, longlong2, longlong3, longlong4, 16, 32)
KDCPU_VEC(long, long1, long2, long3, long4, 16, 32)
#undef KDCPU_VEC
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

// Half and bfloat16: PyTorch's own CPU types, which convert through float as the GPU's do.
typedef c10::Half __half;
typedef c10::Half half;
typedef c10::BFloat16 __nv_bfloat16;
typedef c10::BFloat16 nv_bfloat16;
struct alignas(4) __half2 { __half x, y; };
typedef __half2 half2;
struct alignas(4) __nv_bfloat162 { __nv_bfloat16 x, y; };

// ---------------------------------------------------------------------------------------------------
// The runtime: launch configuration, threads as fibers, barriers.
namespace kdcpu {

inline uint3 thread_idx{0, 0, 0};
inline uint3 block_idx{0, 0, 0};
inline dim3 block_dim{1, 1, 1};
inline dim3 grid_dim{1, 1, 1};
inline int last_error = 0;
inline size_t dynamic_smem_limit = 48 * 1024;
inline std::vector<unsigned char> dynamic_smem_buffer;

inline void* dynamic_smem() { return dynamic_smem_buffer.data(); }

enum State { READY, WAIT_BLOCK, WAIT_WARP, DONE };

struct Fiber {
    ucontext_t ctx;
    State state;
    uint3 tid;
    int linear;
};

struct Block {
    std::vector<Fiber> fibers;
    ucontext_t scheduler;
    int current = -1;
    const void* call = nullptr;
    void (*invoke)(const void*) = nullptr;
    std::vector<char*> stacks;
    size_t stack_size = 256 * 1024;
    // Warp exchange slots: 32 warps of 32 lanes, 16 bytes each.
    unsigned char slots[32][32][16];
    long long block_acc[1] = {0};
};

inline Block* block = nullptr;

inline Block& the_block() {
    static Block b;
    return b;
}

inline int linear_tid() {
    return (int)(thread_idx.x + block_dim.x * (thread_idx.y + block_dim.y * thread_idx.z));
}

inline void fiber_entry() {
    Block& b = *block;
    b.invoke(b.call);
    b.fibers[b.current].state = DONE;
    // returning resumes uc_link, the scheduler
}

inline void wait(State s) {
    if (!block) return;  // a unit without barriers runs threads as plain calls: nothing to wait for
    Block& b = *block;
    Fiber& f = b.fibers[b.current];
    f.state = s;
    swapcontext(&f.ctx, &b.scheduler);
}

// How threads take turns between barriers. Side by side (the default): every thread of the block advances
// store by store. By warps (KDCPU_SCHEDULE=warps, read at each launch): one warp runs, its lanes in step,
// until it waits at a barrier or finishes, then the next; a race between warps (a missing __syncthreads)
// then shows, as it may on a GPU, where warps drift apart. Two runs under the two schedules differ only
// for a kernel whose result depends on timing.
inline bool by_warps = false;

// A store into shared memory lets the block's other threads run before and after it (translate.py wraps
// each such store in a StoreStep): threads advance store by store, as they run side by side on a GPU.
inline void step() {
    if (block) wait(READY);
}

struct StoreStep {
    StoreStep() { step(); }
    ~StoreStep() { step(); }
};

inline char* stack_for(Block& b, size_t i) {
    while (b.stacks.size() <= i) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        void* p = mmap(nullptr, b.stack_size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        TORCH_CHECK(p != MAP_FAILED, "kdebug CUDA emulation: no memory for a thread's stack");
        mprotect(p, page, PROT_NONE);  // a guard page below each stack
        b.stacks.push_back((char*)p + page);
    }
    return b.stacks[i];
}

template <class Call>
void run_block_fibers(const Call& call, int n) {
    Block& b = the_block();
    block = &b;
    b.call = &call;
    b.invoke = [](const void* c) { (*static_cast<const Call*>(c))(); };
    b.fibers.resize(n);
    b.block_acc[0] = 0;
    for (int i = 0; i < n; ++i) {
        Fiber& f = b.fibers[i];
        f.linear = i;
        f.tid = uint3{(unsigned)(i % block_dim.x), (unsigned)((i / block_dim.x) % block_dim.y),
                      (unsigned)(i / (block_dim.x * block_dim.y))};
        f.state = READY;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stack_for(b, i);
        f.ctx.uc_stack.ss_size = b.stack_size;
        f.ctx.uc_link = &b.scheduler;
        makecontext(&f.ctx, (void (*)())fiber_entry, 0);
    }
    int warps = (n + 31) / 32;
    auto run_ready = [&](int from, int to) {
        bool ran = false;
        for (int i = from; i < to; ++i) {
            Fiber& f = b.fibers[i];
            if (f.state != READY) continue;
            b.current = i;
            thread_idx = f.tid;
            swapcontext(&b.scheduler, &f.ctx);
            ran = true;
        }
        return ran;
    };
    for (;;) {
        if (by_warps) {  // each warp alone until it waits: its lanes in step, the next warp after it
            for (int w = 0; w < warps; ++w)
                while (run_ready(w * 32, std::min(n, w * 32 + 32))) {}
        } else {
            run_ready(0, n);
        }
        bool stepping = false;  // threads that stepped aside at a store run on before any barrier opens
        for (int i = 0; i < n && !stepping; ++i) stepping = b.fibers[i].state == READY;
        if (stepping) continue;
        int done = 0, at_block = 0;
        bool released = false;
        for (int w = 0; w < warps; ++w) {
            int lanes_waiting = 0, lanes_at_warp = 0, lanes_live = 0;
            for (int i = w * 32; i < std::min(n, w * 32 + 32); ++i) {
                State s = b.fibers[i].state;
                if (s == DONE) continue;
                ++lanes_live;
                if (s == WAIT_WARP) ++lanes_at_warp;
                if (s == WAIT_WARP || s == WAIT_BLOCK) ++lanes_waiting;
            }
            if (lanes_at_warp && lanes_waiting == lanes_live) {
                for (int i = w * 32; i < std::min(n, w * 32 + 32); ++i)
                    if (b.fibers[i].state == WAIT_WARP) b.fibers[i].state = READY;
                released = true;
            }
        }
        if (released) continue;
        for (int i = 0; i < n; ++i) {
            State s = b.fibers[i].state;
            done += s == DONE;
            at_block += s == WAIT_BLOCK;
        }
        if (done == n) break;
        // Every live thread waits at __syncthreads (threads that exited count as arrived).
        for (int i = 0; i < n; ++i)
            if (b.fibers[i].state == WAIT_BLOCK) b.fibers[i].state = READY;
        (void)at_block;
    }
    block = nullptr;
}

template <class Call>
void run_block_plain(const Call& call) {
    for (unsigned z = 0; z < block_dim.z; ++z)
        for (unsigned y = 0; y < block_dim.y; ++y)
            for (unsigned x = 0; x < block_dim.x; ++x) {
                thread_idx = uint3{x, y, z};
                call();
            }
}

struct Config {
    dim3 grid, blk;
    size_t smem = 0;
};

template <class G, class B>
Config cfg(G g, B b) { return Config{dim3(g), dim3(b), 0}; }
template <class G, class B, class S>
Config cfg(G g, B b, S s) { return Config{dim3(g), dim3(b), (size_t)s}; }
template <class G, class B, class S, class St>
Config cfg(G g, B b, S s, St) { return Config{dim3(g), dim3(b), (size_t)s}; }

template <class T>
dim3 to_dim3(T v) { return dim3(v); }

enum { kInvalidConfiguration = 9, kInvalidValue = 1, kOutOfResources = 7 };

inline bool valid(const Config& c) {
    const dim3& g = c.grid;
    const dim3& b = c.blk;
    if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z) return (last_error = kInvalidConfiguration), false;
    if ((unsigned long long)b.x * b.y * b.z > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64)
        return (last_error = kInvalidConfiguration), false;
    if (g.x > 2147483647u || g.y > 65535 || g.z > 65535) return (last_error = kInvalidConfiguration), false;
    if (c.smem > dynamic_smem_limit) return (last_error = kOutOfResources), false;
    return true;
}

#ifndef KDCPU_FIBERS
#define KDCPU_FIBERS 0
#endif

template <class Kernel, class... A>
void launch(const Config& c, Kernel kernel, A&&... args) {
    if (!valid(c)) return;
    std::tuple<std::decay_t<A>...> saved(std::forward<A>(args)...);
    const char* schedule = std::getenv("KDCPU_SCHEDULE");
    by_warps = schedule && std::string(schedule) == "warps";
    grid_dim = c.grid;
    block_dim = c.blk;
    dynamic_smem_buffer.assign(c.smem + 16, 0);
    int n = (int)(c.blk.x * c.blk.y * c.blk.z);
    auto call = [&]() {
        auto copy = saved;  // kernel parameters are per-thread copies
        std::apply(kernel, copy);
    };
    for (unsigned bz = 0; bz < c.grid.z; ++bz)
        for (unsigned by = 0; by < c.grid.y; ++by)
            for (unsigned bx = 0; bx < c.grid.x; ++bx) {
                block_idx = uint3{bx, by, bz};
                // On a GPU a block's dynamic shared memory holds whatever was there (an earlier block's values,
                // anything): each block here starts with NaN bytes (-1 as integers), so a kernel reading entries
                // its threads never wrote computes NaN rather than passing on the zeros of a fresh buffer.
                std::memset(dynamic_smem_buffer.data(), 0xFF, c.smem);
                if (KDCPU_FIBERS)
                    run_block_fibers(call, n);
                else
                    run_block_plain(call);
            }
}

template <class T>
inline T warp_read(T v, int src) {
    static_assert(sizeof(T) <= 16, "kdebug CUDA emulation: a warp exchange of more than 16 bytes");
    if (!block) return v;
    int lane = linear_tid() % 32, w = linear_tid() / 32;
    std::memcpy(block->slots[w][lane], &v, sizeof(T));
    wait(WAIT_WARP);
    T r;
    std::memcpy(&r, block->slots[w][src & 31], sizeof(T));
    wait(WAIT_WARP);
    return r;
}

inline unsigned warp_ballot(bool pred) {
    if (!block) return pred ? 1u : 0u;
    int lane = linear_tid() % 32, w = linear_tid() / 32;
    block->slots[w][lane][0] = pred ? 1 : 0;
    block->slots[w][lane][1] = 1;  // this lane took part
    wait(WAIT_WARP);
    unsigned bits = 0;
    int base = w * 32;
    int n = (int)block->fibers.size();
    for (int l = 0; l < 32 && base + l < n; ++l)
        if (block->fibers[base + l].state != DONE && block->slots[w][l][1] && block->slots[w][l][0]) bits |= 1u << l;
    wait(WAIT_WARP);
    block->slots[w][lane][1] = 0;
    return bits;
}

inline long long block_count(bool v) {  // __syncthreads_count: every thread adds, then all read
    if (!block) return v;
    Block& b = *block;
    b.block_acc[0] += v;
    wait(WAIT_BLOCK);
    long long r = b.block_acc[0];
    wait(WAIT_BLOCK);
    if (linear_tid() == 0) b.block_acc[0] = 0;
    wait(WAIT_BLOCK);
    return r;
}

}  // namespace kdcpu

// Variables, not macros: host code may declare its own `dim3 blockDim(...)`, which shadows them as in CUDA.
inline const uint3& threadIdx = ::kdcpu::thread_idx;
inline const uint3& blockIdx = ::kdcpu::block_idx;
inline const dim3& blockDim = ::kdcpu::block_dim;
inline const dim3& gridDim = ::kdcpu::grid_dim;
inline constexpr int warpSize = 32;

inline void __syncthreads() { ::kdcpu::wait(::kdcpu::WAIT_BLOCK); }
inline int __syncthreads_count(int p) { return (int)::kdcpu::block_count(p != 0); }
inline int __syncthreads_or(int p) { return ::kdcpu::block_count(p != 0) != 0; }
inline int __syncthreads_and(int p) { return ::kdcpu::block_count(p == 0) == 0; }
inline void __syncwarp(unsigned = 0xffffffffu) { ::kdcpu::wait(::kdcpu::WAIT_WARP); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline unsigned __activemask() { return 0xffffffffu; }

template <class T>
T __shfl_sync(unsigned, T v, int src, int width = 32) {
    int lane = ::kdcpu::linear_tid() % 32;
    return ::kdcpu::warp_read(v, (lane / width) * width + (src % width));
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32) {
    int lane = ::kdcpu::linear_tid() % 32;
    int src = (lane % width) + (int)d < width ? lane + (int)d : lane;
    return ::kdcpu::warp_read(v, src);
}
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32) {
    int lane = ::kdcpu::linear_tid() % 32;
    int src = (lane % width) >= (int)d ? lane - (int)d : lane;
    return ::kdcpu::warp_read(v, src);
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int m, int width = 32) {
    int lane = ::kdcpu::linear_tid() % 32;
    int src = lane ^ m;
    if (src / width != lane / width) src = lane;
    return ::kdcpu::warp_read(v, src);
}
template <class T> T __shfl(T v, int src, int width = 32) { return __shfl_sync(0xffffffffu, v, src, width); }
template <class T> T __shfl_down(T v, unsigned d, int width = 32) { return __shfl_down_sync(0xffffffffu, v, d, width); }
template <class T> T __shfl_up(T v, unsigned d, int width = 32) { return __shfl_up_sync(0xffffffffu, v, d, width); }
template <class T> T __shfl_xor(T v, int m, int width = 32) { return __shfl_xor_sync(0xffffffffu, v, m, width); }
inline unsigned __ballot_sync(unsigned, int p) { return ::kdcpu::warp_ballot(p != 0); }
inline int __any_sync(unsigned, int p) { return ::kdcpu::warp_ballot(p != 0) != 0; }
inline int __all_sync(unsigned m, int p) { return ::kdcpu::warp_ballot(p == 0) == 0; }
inline unsigned __ballot(int p) { return __ballot_sync(0xffffffffu, p); }
template <class T> T __reduce_add_sync(unsigned m, T v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(m, v, o);
    return v;
}
template <class T> T __reduce_max_sync(unsigned m, T v) {
    for (int o = 16; o > 0; o /= 2) { T u = __shfl_xor_sync(m, v, o); v = u > v ? u : v; }
    return v;
}
template <class T> T __reduce_min_sync(unsigned m, T v) {
    for (int o = 16; o > 0; o /= 2) { T u = __shfl_xor_sync(m, v, o); v = u < v ? u : v; }
    return v;
}

// ---------------------------------------------------------------------------------------------------
// Atomics: one thread runs at a time, so a read-modify-write is atomic as written.
template <class T, class U> T atomicAdd(T* a, U v) { T o = *a; *a = (T)(o + (T)v); return o; }
template <class T, class U> T atomicSub(T* a, U v) { T o = *a; *a = (T)(o - (T)v); return o; }
template <class T, class U> T atomicExch(T* a, U v) { T o = *a; *a = (T)v; return o; }
template <class T, class U> T atomicMax(T* a, U v) { T o = *a; *a = o < (T)v ? (T)v : o; return o; }
template <class T, class U> T atomicMin(T* a, U v) { T o = *a; *a = (T)v < o ? (T)v : o; return o; }
template <class T, class U> T atomicAnd(T* a, U v) { T o = *a; *a = o & (T)v; return o; }
template <class T, class U> T atomicOr(T* a, U v) { T o = *a; *a = o | (T)v; return o; }
template <class T, class U> T atomicXor(T* a, U v) { T o = *a; *a = o ^ (T)v; return o; }
template <class T, class U, class V> T atomicCAS(T* a, U cmp, V v) { T o = *a; if (o == (T)cmp) *a = (T)v; return o; }
inline unsigned atomicInc(unsigned* a, unsigned v) { unsigned o = *a; *a = o >= v ? 0 : o + 1; return o; }
inline unsigned atomicDec(unsigned* a, unsigned v) { unsigned o = *a; *a = (o == 0 || o > v) ? v : o - 1; return o; }
template <class T, class U> T atomicAdd_block(T* a, U v) { return atomicAdd(a, v); }
template <class T, class U> T atomicAdd_system(T* a, U v) { return atomicAdd(a, v); }
template <class T, class U> T atomicMax_block(T* a, U v) { return atomicMax(a, v); }
template <class T, class U> T atomicMin_block(T* a, U v) { return atomicMin(a, v); }

// ---------------------------------------------------------------------------------------------------
// Device math and intrinsics, in float where CUDA has float versions.
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.f, x); }
inline float exp10f(float x) { return powf(10.f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.f / sqrtf(x); }
inline float rsqrtf(float x) { return 1.f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.f / cbrtf(x); }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fadd_rz(float a, float b) { return a + b; }
inline float __fmul_rz(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752); }
inline float erfinvf(float y) {
    if (y <= -1.f) return -INFINITY;
    if (y >= 1.f) return INFINITY;
    double x = 0.0, w = -std::log((1.0 - y) * (1.0 + y));
    if (w < 5.0) { w -= 2.5; x = 2.81022636e-08; x = 3.43273939e-07 + x * w; x = -3.5233877e-06 + x * w;
        x = -4.39150654e-06 + x * w; x = 0.00021858087 + x * w; x = -0.00125372503 + x * w;
        x = -0.00417768164 + x * w; x = 0.246640727 + x * w; x = 1.50140941 + x * w; }
    else { w = std::sqrt(w) - 3.0; x = -0.000200214257; x = 0.000100950558 + x * w; x = 0.00134934322 + x * w;
        x = -0.00367342844 + x * w; x = 0.00573950773 + x * w; x = -0.0076224613 + x * w;
        x = 0.00943887047 + x * w; x = 1.00167406 + x * w; x = 2.83297682 + x * w; }
    x *= y;
    for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));  // Newton
    return (float)x;
}
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline int __double2int_rn(double x) { return (int)std::nearbyint(x); }
inline float __double2float_rn(double x) { return (float)x; }
inline int __float_as_int(float x) { int r; std::memcpy(&r, &x, 4); return r; }
inline unsigned __float_as_uint(float x) { unsigned r; std::memcpy(&r, &x, 4); return r; }
inline float __int_as_float(int x) { float r; std::memcpy(&r, &x, 4); return r; }
inline float __uint_as_float(unsigned x) { float r; std::memcpy(&r, &x, 4); return r; }
inline long long __double_as_longlong(double x) { long long r; std::memcpy(&r, &x, 8); return r; }
inline double __longlong_as_double(long long x) { double r; std::memcpy(&r, &x, 8); return r; }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) { unsigned r = 0; for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i); return r; }
inline int __mul24(int a, int b) { return a * b; }
inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
inline long long clock64() { return 0; }

// CUDA's global min/max overloads (exact matches win over std's templates where both are visible).
#define KDCPU_MINMAX(T) \
    inline T min(T a, T b) { return b < a ? b : a; } \
    inline T max(T a, T b) { return a < b ? b : a; }
KDCPU_MINMAX(int)
KDCPU_MINMAX(unsigned int)
KDCPU_MINMAX(long)
KDCPU_MINMAX(unsigned long)
KDCPU_MINMAX(long long)
KDCPU_MINMAX(unsigned long long)
KDCPU_MINMAX(float)
KDCPU_MINMAX(double)
#undef KDCPU_MINMAX
inline float min(float a, double b) { return fminf(a, (float)b); }
inline float max(float a, double b) { return fmaxf(a, (float)b); }
inline double min(double a, float b) { return std::fmin(a, (double)b); }
inline double max(double a, float b) { return std::fmax(a, (double)b); }
inline long long min(int a, long long b) { return b < a ? b : a; }
inline long long max(int a, long long b) { return a < b ? b : a; }
inline long long min(long long a, int b) { return b < a ? b : a; }
inline long long max(long long a, int b) { return a < b ? b : a; }
inline unsigned min(int a, unsigned b) { return b < (unsigned)a ? b : (unsigned)a; }
inline unsigned max(int a, unsigned b) { return (unsigned)a < b ? b : (unsigned)a; }
inline unsigned min(unsigned a, int b) { return (unsigned)b < a ? (unsigned)b : a; }
inline unsigned max(unsigned a, int b) { return a < (unsigned)b ? (unsigned)b : a; }

// Half and bfloat16 intrinsics.
inline __half __float2half(float x) { return __half(x); }
inline __half __float2half_rn(float x) { return __half(x); }
inline __half __float2half_rz(float x) { return __half(x); }
inline float __half2float(__half x) { return (float)x; }
inline __half __int2half_rn(int x) { return __half((float)x); }
inline int __half2int_rn(__half x) { return (int)nearbyintf((float)x); }
inline __half __hadd(__half a, __half b) { return __half((float)a + (float)b); }
inline __half __hsub(__half a, __half b) { return __half((float)a - (float)b); }
inline __half __hmul(__half a, __half b) { return __half((float)a * (float)b); }
inline __half __hdiv(__half a, __half b) { return __half((float)a / (float)b); }
inline __half __hneg(__half a) { return __half(-(float)a); }
inline __half __hfma(__half a, __half b, __half c) { return __half(fmaf((float)a, (float)b, (float)c)); }
inline __half __hmax(__half a, __half b) { return (float)a < (float)b ? b : a; }
inline __half __hmin(__half a, __half b) { return (float)b < (float)a ? b : a; }
inline bool __hgt(__half a, __half b) { return (float)a > (float)b; }
inline bool __hlt(__half a, __half b) { return (float)a < (float)b; }
inline bool __hge(__half a, __half b) { return (float)a >= (float)b; }
inline bool __hle(__half a, __half b) { return (float)a <= (float)b; }
inline bool __heq(__half a, __half b) { return (float)a == (float)b; }
inline bool __hisnan(__half a) { return std::isnan((float)a); }
inline __half hexp(__half a) { return __half(expf((float)a)); }
inline __half hlog(__half a) { return __half(logf((float)a)); }
inline __half hsqrt(__half a) { return __half(sqrtf((float)a)); }
inline __half hrsqrt(__half a) { return __half(1.f / sqrtf((float)a)); }
inline __half __habs(__half a) { return __half(fabsf((float)a)); }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
inline float2 __half22float2(__half2 h) { return float2{(float)h.x, (float)h.y}; }
inline __half2 __float22half2_rn(float2 f) { return __half2{__half(f.x), __half(f.y)}; }
inline float __low2float(__half2 h) { return (float)h.x; }
inline float __high2float(__half2 h) { return (float)h.y; }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return __half2{__hsub(a.x, b.x), __hsub(a.y, b.y)}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
inline __nv_bfloat16 __float2bfloat16(float x) { return __nv_bfloat16(x); }
inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __nv_bfloat16(x); }
inline float __bfloat162float(__nv_bfloat16 x) { return (float)x; }

// ---------------------------------------------------------------------------------------------------
// The host runtime API.
typedef int cudaError_t;
typedef void* cudaStream_t;
typedef void* cudaEvent_t;
typedef int cudaMemcpyKind;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorLaunchOutOfResources = 7,
       cudaErrorInvalidConfiguration = 9 };
enum { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3,
       cudaMemcpyDefault = 4 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaFuncCache { cudaFuncCachePreferNone, cudaFuncCachePreferShared, cudaFuncCachePreferL1, cudaFuncCachePreferEqual };
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrWarpSize = 10,
                      cudaDevAttrMultiProcessorCount = 16, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
                      cudaDevAttrMaxThreadsPerMultiProcessor = 39, cudaDevAttrMaxGridDimX = 5, cudaDevAttrMaxGridDimY = 6,
                      cudaDevAttrMaxGridDimZ = 7, cudaDevAttrMaxBlockDimX = 2 };
#define cudaStreamDefault 0
#define cudaStreamNonBlocking 1
struct cudaDeviceProp {
    char name[256] = "kdebug CUDA emulation (H200 limits)";
    int multiProcessorCount = 132, maxThreadsPerBlock = 1024, warpSize = 32, maxThreadsPerMultiProcessor = 2048;
    size_t sharedMemPerBlock = 49152, sharedMemPerBlockOptin = 232448, sharedMemPerMultiprocessor = 233472;
    size_t totalGlobalMem = 150ull << 30;
    int maxThreadsDim[3] = {1024, 1024, 64}, maxGridSize[3] = {2147483647, 65535, 65535};
    int major = 9, minor = 0, regsPerBlock = 65536, l2CacheSize = 50 << 20, clockRate = 1980000;
    int memoryBusWidth = 6144, memoryClockRate = 2619000, concurrentKernels = 1, maxBlocksPerMultiProcessor = 32;
};
inline const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
        case cudaErrorMemoryAllocation: return "out of memory";
        default: return "invalid argument";
    }
}
inline const char* cudaGetErrorName(cudaError_t e) { return cudaGetErrorString(e); }
inline cudaError_t cudaGetLastError() { int e = ::kdcpu::last_error; ::kdcpu::last_error = 0; return e; }
inline cudaError_t cudaPeekAtLastError() { return ::kdcpu::last_error; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { *s = nullptr; return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { *s = nullptr; return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = nullptr; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = nullptr) { return cudaSuccess; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) { *ms = 0.f; return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) { *p = cudaDeviceProp{}; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
    cudaDeviceProp p;
    switch (a) {
        case cudaDevAttrMaxThreadsPerBlock: case cudaDevAttrMaxBlockDimX: *v = 1024; break;
        case cudaDevAttrMaxSharedMemoryPerBlock: *v = 49152; break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)p.sharedMemPerBlockOptin; break;
        case cudaDevAttrWarpSize: *v = 32; break;
        case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
        case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; break;
        case cudaDevAttrMaxGridDimX: *v = 2147483647; break;
        default: *v = 65535;
    }
    return cudaSuccess;
}
template <class F, class V>
cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute a, V v) {
    if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) ::kdcpu::dynamic_smem_limit = (size_t)v;
    return cudaSuccess;
}
template <class F> cudaError_t cudaFuncSetCacheConfig(F, cudaFuncCache) { return cudaSuccess; }
template <class F>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, F, int block, size_t) {
    *n = block > 0 ? std::max(1, 2048 / block) : 0;
    return cudaSuccess;
}
template <class F>
cudaError_t cudaOccupancyMaxPotentialBlockSize(int* grid, int* block, F, size_t = 0, int = 0) {
    *grid = 132 * 2; *block = 1024;
    return cudaSuccess;
}
template <class T> cudaError_t cudaMalloc(T** p, size_t n) {
    *p = (T*)std::calloc(n ? n : 1, 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T> cudaError_t cudaMallocAsync(T** p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
template <class T> cudaError_t cudaMallocManaged(T** p, size_t n, unsigned = 1) { return cudaMalloc(p, n); }
inline cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, int) { std::memmove(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, int, cudaStream_t = nullptr) {
    std::memmove(d, s, n);
    return cudaSuccess;
}
inline cudaError_t cudaMemset(void* d, int v, size_t n) { std::memset(d, v, n); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t = nullptr) { std::memset(d, v, n); return cudaSuccess; }
template <class T>
cudaError_t cudaMemcpyToSymbol(T& sym, const void* src, size_t n, size_t off = 0, int = cudaMemcpyHostToDevice) {
    std::memcpy((char*)&sym + off, src, n);
    return cudaSuccess;
}
template <class T>
cudaError_t cudaMemcpyToSymbolAsync(T& sym, const void* src, size_t n, size_t off = 0, int = 1, cudaStream_t = nullptr) {
    std::memcpy((char*)&sym + off, src, n);
    return cudaSuccess;
}
template <class T>
cudaError_t cudaMemcpyFromSymbol(void* dst, const T& sym, size_t n, size_t off = 0, int = cudaMemcpyDeviceToHost) {
    std::memcpy(dst, (const char*)&sym + off, n);
    return cudaSuccess;
}

// PyTorch's CUDA helpers, as the CPU build lacks them.
namespace kdcpu {
struct Stream {
    cudaStream_t stream() const { return nullptr; }
    operator cudaStream_t() const { return nullptr; }
    void synchronize() const {}
    int device_index() const { return 0; }
};
struct Guard {
    template <class... A> explicit Guard(A&&...) {}
    template <class T> void set_device(T&&) {}
    template <class T> void reset_device(T&&) {}
};
inline void launch_check() {
    int e = cudaGetLastError();
    TORCH_CHECK(e == 0, "CUDA error: ", cudaGetErrorString(e));
}
}  // namespace kdcpu

namespace c10 { namespace cuda {
inline ::kdcpu::Stream getCurrentCUDAStream(int = -1) { return {}; }
inline ::kdcpu::Stream getDefaultCUDAStream(int = -1) { return {}; }
inline ::kdcpu::Stream getStreamFromPool(bool = false, int = -1) { return {}; }
using CUDAStream = ::kdcpu::Stream;
using CUDAGuard = ::kdcpu::Guard;
using OptionalCUDAGuard = ::kdcpu::Guard;
using CUDAStreamGuard = ::kdcpu::Guard;
inline int current_device() { return 0; }
inline int device_count() { return 1; }
inline void device_synchronize() {}
}}  // namespace c10::cuda
namespace at { namespace cuda {
using c10::cuda::getCurrentCUDAStream;
using c10::cuda::getDefaultCUDAStream;
using c10::cuda::getStreamFromPool;
using c10::cuda::CUDAStream;
using c10::cuda::CUDAGuard;
using c10::cuda::OptionalCUDAGuard;
using c10::cuda::CUDAStreamGuard;
inline cudaDeviceProp* getCurrentDeviceProperties() { static cudaDeviceProp p; return &p; }
inline cudaDeviceProp* getDeviceProperties(int) { return getCurrentDeviceProperties(); }
inline int current_device() { return 0; }
inline int getNumGPUs() { return 1; }
inline bool is_available() { return true; }
}}  // namespace at::cuda

#define C10_CUDA_KERNEL_LAUNCH_CHECK() ::kdcpu::launch_check()
#define C10_CUDA_CHECK(expr) do { int kd_e = (expr); TORCH_CHECK(kd_e == 0, "CUDA error: ", cudaGetErrorString(kd_e)); } while (0)
#define AT_CUDA_CHECK(expr) C10_CUDA_CHECK(expr)
#define C10_CUDA_CHECK_WARN(expr) (void)(expr)
#define C10_WARP_SIZE 32
#define CUDART_INF_F INFINITY
#define CUDART_NAN_F NAN
#define CUDART_INF INFINITY
#define CUDART_NAN NAN
#define CUDART_PI_F 3.141592654f
#define CUDART_PI 3.1415926535897931
#define CUDART_SQRT_2PI_F 2.506628275f
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_MAX_NORMAL_F FLT_MAX
#define CUDART_MIN_DENORM_F 1.40129846e-45f
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f

// cuBLAS: handles and the single-precision GEMMs (column-major, as cuBLAS), computed in double.
typedef int cublasStatus_t;
typedef void* cublasHandle_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TENSOR_OP_MATH = 1, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
enum { CUBLAS_STATUS_SUCCESS = 0 };
inline cublasStatus_t cublasCreate(cublasHandle_t* h) { *h = nullptr; return 0; }
inline cublasStatus_t cublasDestroy(cublasHandle_t) { return 0; }
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return 0; }
inline cublasStatus_t cublasGetStream(cublasHandle_t, cudaStream_t* s) { *s = nullptr; return 0; }
inline cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return 0; }
inline cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                                int k, const float* alpha, const float* A, int lda, long long sa,
                                                const float* B, int ldb, long long sb, const float* beta, float* C,
                                                int ldc, long long sc, int batches) {
    for (int b = 0; b < batches; ++b) {
        const float* a = A + b * sa;
        const float* bb = B + b * sb;
        float* c = C + b * sc;
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < m; ++i) {
                double acc = 0.0;
                for (int p = 0; p < k; ++p) {
                    float x = ta == CUBLAS_OP_N ? a[i + (long long)p * lda] : a[p + (long long)i * lda];
                    float y = tb == CUBLAS_OP_N ? bb[p + (long long)j * ldb] : bb[j + (long long)p * ldb];
                    acc += (double)x * y;
                }
                float* out = c + i + (long long)j * ldc;
                *out = (float)(*alpha * acc + (*beta == 0.f ? 0.0 : (double)*beta * *out));
            }
    }
    return 0;
}
inline cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const float* alpha, const float* A, int lda, const float* B, int ldb,
                                  const float* beta, float* C, int ldc) {
    return cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

// ---------------------------------------------------------------------------------------------------
// CUB's block-wide collectives (cub::BlockReduce, cub::BlockScan) and its reduction functors. Every thread
// of the block hands its value to TempStorage (a __shared__ object, so one per block), waits at a barrier,
// and reads what it needs; a second barrier lets the storage be reused, as CUB's own calls allow. What CUB
// leaves undefined stays wrong here: a reduction's result is the block's aggregate in thread 0 only (other
// threads get their own input back), and a block larger than the template's thread count leaves the extra
// threads out of the collective (they get their input back). Algorithms (BLOCK_REDUCE_*, BLOCK_SCAN_*)
// change only the order of CUB's floating-point sums: here they run in thread order. Device-wide CUB
// (cub::Device*), warp collectives and block loads/stores are not stood in for (translate.blocker names them).
namespace cub {
enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

struct Sum {
    template <class T> T operator()(const T& a, const T& b) const { return a + b; }
};
struct Max {
    template <class T> T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
struct Min {
    template <class T> T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};

namespace detail {
// Slots of a block's collective: each thread's value, in linear thread order.
template <class T, int N> struct Slots {
    T vals[N];
};

template <class T, int N, class Op> T fold(const Slots<T, N>& s, int from, int to, T init, Op op) {
    for (int i = from; i < to; ++i) init = op(init, s.vals[i]);
    return init;
}

template <class T, int I, class Op> T thread_fold(const T (&in)[I], Op op) {
    T acc = in[0];
    for (int i = 1; i < I; ++i) acc = op(acc, in[i]);
    return acc;
}

// What BlockReduce and BlockScan share: the slots (the caller's __shared__ TempStorage, or storage of the
// collective's own, `Owner` keeping each kind's apart) and the step every call opens with.
template <class Owner, class T, int N> class Collective {
public:
    typedef Slots<T, N> TempStorage;

    Collective() : s_(private_storage()) {}
    explicit Collective(TempStorage& storage) : s_(storage) {}

protected:
    // This thread's value into its slot (threads past the template's count have none), then a barrier: every
    // slot of the block is written. Returns the thread's linear index.
    int publish(T input) {
        const int t = ::kdcpu::linear_tid();
        if (t < N) s_.vals[t] = input;
        __syncthreads();
        return t;
    }
    TempStorage& s_;

private:
    static TempStorage& private_storage() {
        static TempStorage storage;
        return storage;
    }
};
}  // namespace detail

template <class T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockReduce
    : public detail::Collective<BlockReduce<T, BLOCK_DIM_X, ALGORITHM, BLOCK_DIM_Y, BLOCK_DIM_Z, LEGACY_PTX_ARCH>, T,
                                BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z> {
    static constexpr int N = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    typedef detail::Collective<BlockReduce, T, N> Base;
    using Base::s_;

public:
    using Base::Base;
    using typename Base::TempStorage;

    template <class Op> T Reduce(T input, Op op) { return Reduce(input, op, N); }
    template <class Op> T Reduce(T input, Op op, int num_valid) {
        const int t = this->publish(input);
        T out = input;
        if (t == 0 && num_valid > 0) out = detail::fold(s_, 1, std::min(num_valid, N), s_.vals[0], op);
        __syncthreads();
        return out;
    }
    template <int I, class Op> T Reduce(T (&inputs)[I], Op op) { return Reduce(detail::thread_fold(inputs, op), op); }
    T Sum(T input) { return Reduce(input, cub::Sum()); }
    T Sum(T input, int num_valid) { return Reduce(input, cub::Sum(), num_valid); }
    template <int I> T Sum(T (&inputs)[I]) { return Reduce(inputs, cub::Sum()); }
};

template <class T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockScan
    : public detail::Collective<BlockScan<T, BLOCK_DIM_X, ALGORITHM, BLOCK_DIM_Y, BLOCK_DIM_Z, LEGACY_PTX_ARCH>, T,
                                BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z> {
    static constexpr int N = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    typedef detail::Collective<BlockScan, T, N> Base;
    using Base::s_;

public:
    using Base::Base;
    using typename Base::TempStorage;

    // One value per thread.
    template <class Op> void InclusiveScan(T input, T& output, Op op, T& block_aggregate) {
        scan(input, output, op, nullptr, &block_aggregate, true);
    }
    template <class Op> void InclusiveScan(T input, T& output, Op op) { scan(input, output, op, nullptr, nullptr, true); }
    template <class Op> void ExclusiveScan(T input, T& output, T initial_value, Op op, T& block_aggregate) {
        scan(input, output, op, &initial_value, &block_aggregate, false);
    }
    template <class Op> void ExclusiveScan(T input, T& output, T initial_value, Op op) {
        scan(input, output, op, &initial_value, nullptr, false);
    }
    void InclusiveSum(T input, T& output) { InclusiveScan(input, output, cub::Sum()); }
    void InclusiveSum(T input, T& output, T& block_aggregate) { InclusiveScan(input, output, cub::Sum(), block_aggregate); }
    void ExclusiveSum(T input, T& output) { ExclusiveScan(input, output, T(0), cub::Sum()); }
    void ExclusiveSum(T input, T& output, T& block_aggregate) {
        ExclusiveScan(input, output, T(0), cub::Sum(), block_aggregate);
    }

    // Several consecutive values per thread (a blocked arrangement).
    template <int I, class Op> void InclusiveScan(T (&input)[I], T (&output)[I], Op op, T& block_aggregate) {
        scan_items(input, output, op, nullptr, &block_aggregate, true);
    }
    template <int I, class Op> void InclusiveScan(T (&input)[I], T (&output)[I], Op op) {
        scan_items(input, output, op, nullptr, nullptr, true);
    }
    template <int I, class Op> void ExclusiveScan(T (&input)[I], T (&output)[I], T initial_value, Op op) {
        scan_items(input, output, op, &initial_value, nullptr, false);
    }
    template <int I, class Op>
    void ExclusiveScan(T (&input)[I], T (&output)[I], T initial_value, Op op, T& block_aggregate) {
        scan_items(input, output, op, &initial_value, &block_aggregate, false);
    }
    template <int I> void InclusiveSum(T (&input)[I], T (&output)[I]) { InclusiveScan(input, output, cub::Sum()); }
    template <int I> void InclusiveSum(T (&input)[I], T (&output)[I], T& block_aggregate) {
        InclusiveScan(input, output, cub::Sum(), block_aggregate);
    }
    template <int I> void ExclusiveSum(T (&input)[I], T (&output)[I]) { ExclusiveScan(input, output, T(0), cub::Sum()); }
    template <int I> void ExclusiveSum(T (&input)[I], T (&output)[I], T& block_aggregate) {
        ExclusiveScan(input, output, T(0), cub::Sum(), block_aggregate);
    }

private:
    // Thread t's inclusive (or exclusive, from *initial) prefix of the block's values; the aggregate to all.
    template <class Op> void scan(T input, T& output, Op op, const T* initial, T* aggregate, bool inclusive) {
        const int t = this->publish(input);
        T out = input;
        if (t < N) {
            if (inclusive) out = detail::fold(s_, 1, t + 1, s_.vals[0], op);
            else if (initial) out = detail::fold(s_, 0, t, *initial, op);
            else if (t > 0) out = detail::fold(s_, 1, t, s_.vals[0], op);  // thread 0's is undefined in CUB
        }
        T total = detail::fold(s_, 1, N, s_.vals[0], op);
        __syncthreads();
        output = out;
        if (aggregate) *aggregate = total;
    }
    template <int I, class Op>
    void scan_items(T (&input)[I], T (&output)[I], Op op, const T* initial, T* aggregate, bool inclusive) {
        T items[I];
        for (int i = 0; i < I; ++i) items[i] = input[i];  // input and output may be one array
        T prefix{}, total{};
        const int t = ::kdcpu::linear_tid();
        T own = detail::thread_fold(items, op);
        if (initial) scan(own, prefix, op, initial, &total, false);
        else scan(own, prefix, op, nullptr, &total, false);
        const bool has_prefix = initial != nullptr || (t > 0 && t < N);
        T acc = prefix;
        for (int i = 0; i < I; ++i) {
            if (inclusive) {
                acc = (i == 0 && !has_prefix) ? items[0] : op(acc, items[i]);
                output[i] = acc;
            } else {
                output[i] = (i == 0 && !has_prefix) ? items[0] : acc;  // thread 0's first is undefined in CUB
                acc = (i == 0 && !has_prefix) ? items[0] : op(acc, items[i]);
            }
        }
        if (aggregate) *aggregate = total;
    }
};
}  // namespace cub
