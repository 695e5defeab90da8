#pragma once
// Clang's thread-safety attributes (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html),
// spelled as in LevelDB and abseil. Clang checks them with -Wthread-safety, which the build
// turns into errors (cmake/GpucanaryHelpers.cmake); other compilers see nothing.
//
// Convention (docs/architecture.md, "Concurrency"): every member a mutex guards says so with
// GUARDED_BY(mu_), every private helper that expects the lock held says REQUIRES(mu_), and a
// lambda that runs under the lock (a condition-variable predicate) says so too:
//   cv_.Wait(mu_, [&]() REQUIRES(mu_) { return !queue_.empty(); });

#if defined(__clang__)
#define GC_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define GC_THREAD_ANNOTATION_(x)
#endif

// A type that is a lock (a "capability" to clang), e.g. CAPABILITY("mutex").
#define CAPABILITY(x) GC_THREAD_ANNOTATION_(capability(x))
// An RAII type that holds a capability for its lifetime.
#define SCOPED_CAPABILITY GC_THREAD_ANNOTATION_(scoped_lockable)

// Data members: read or written only with the capability held.
#define GUARDED_BY(x) GC_THREAD_ANNOTATION_(guarded_by(x))
// Pointer members: the pointee (not the pointer) needs the capability.
#define PT_GUARDED_BY(x) GC_THREAD_ANNOTATION_(pt_guarded_by(x))

// Lock ordering between capabilities.
#define ACQUIRED_BEFORE(...) GC_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) GC_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))

// Functions: the caller must hold the capability exclusively / at least shared.
#define REQUIRES(...) GC_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) GC_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))

// Functions that take or give back a capability (lock and unlock operations).
#define ACQUIRE(...) GC_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) GC_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) GC_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) GC_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) GC_THREAD_ANNOTATION_(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) GC_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) GC_THREAD_ANNOTATION_(try_acquire_shared_capability(__VA_ARGS__))

// Functions: the caller must NOT hold the capability (the function takes it itself).
#define EXCLUDES(...) GC_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))

// Functions that check at run time that the capability is held.
#define ASSERT_CAPABILITY(x) GC_THREAD_ANNOTATION_(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) GC_THREAD_ANNOTATION_(assert_shared_capability(x))

// A function that returns a reference to the capability.
#define RETURN_CAPABILITY(x) GC_THREAD_ANNOTATION_(lock_returned(x))

// Turns the analysis off for one function; say beside it why the analysis cannot follow.
#define NO_THREAD_SAFETY_ANALYSIS GC_THREAD_ANNOTATION_(no_thread_safety_analysis)
