import Core
import CAllocCounter

/// Heap allocations made by the process so far (every malloc/calloc/realloc/aligned call).
/// Benchmarks read it before and after a hot loop to show the loop allocates nothing.
func allocationCount() -> UInt64 { tv_alloc_count() }
