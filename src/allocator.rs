//! The daemon's memory allocator: jemalloc, which hands memory back to the system.
//!
//! A declared state of 100,000 slices applied and removed again frees hundreds of
//! megabytes of small allocations (sled's node copies, the plan, its answer), spread
//! between ones that live on. glibc's allocator kept them: 246 MiB resident for 63 MiB
//! live after one such swap, and `malloc_trim` gave little back, since few whole pages
//! were free. jemalloc keeps small allocations of a size together and returns pages that
//! empty out; with a background thread purging pages left unused for a second, the
//! daemon returns close to what its data needs once an apply is over, without a request
//! paying for it (see the applies part of docs/benchmarks.md).
//!
//! The options are jemalloc's own (`background_thread`, `dirty_decay_ms`,
//! `muzzy_decay_ms`), read at its start from the `malloc_conf` string that the
//! `tikv-jemallocator` build names `_rjem_malloc_conf`; `_RJEM_MALLOC_CONF` in the
//! environment still overrides them.

use std::ffi::c_char;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Purge unused pages in a background thread, a second after they empty out, and give
/// them back at once (no lazy `MADV_FREE` stage, which still counts as resident).
const OPTIONS: &[u8] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

/// jemalloc reads this C string (`const char *`) before its first allocation.
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub(crate) static malloc_conf: Option<&'static c_char> = Some(
    // SAFETY: OPTIONS is a static, NUL-terminated byte string, so the pointer is valid
    // for the whole run and points at a C string; u8 and c_char have one layout.
    unsafe { &*OPTIONS.as_ptr().cast::<c_char>() },
);
