//! The process's heap made the seed's: every allocation the program makes
//! once the layer is in use ([`crate::main`], [`crate::install`]) comes
//! back filled with zeros, so that bytes an engine never initialised read
//! the same in every run, whatever ran in the process before.
//!
//! Why: an engine that writes heap memory it never initialised puts
//! whatever the allocator last held there into its files. jammdb does
//! (JAMMDB.md, finding 4): each page it writes starts with a `#[repr(C)]`
//! header whose 7 padding bytes after the page type come straight from a
//! `bumpalo` arena that is never cleared. Those bytes were the previous
//! owner's: another crash state's pages, a freed `Vec`. A crash state's
//! image then depended on which states the process had explored before
//! (`explore --depth 2 --faults` gave 778 to 790 failures and a varying
//! number of distinct states), and a seed could write other bytes in a
//! sweep than alone. Zeros are what fresh memory from the kernel holds,
//! one of the values a real run could see.
//!
//! glibc's `M_PERTURB` (`MALLOC_PERTURB_`) does not do this: a chunk the
//! thread's `tcache` hands back is neither filled at `free` nor at
//! `malloc`, and keeps its old bytes.
//!
//! The limits: only Rust's allocations through the global allocator are
//! filled: memory a C library takes from `malloc` itself, or the stack,
//! is not. A binary with a `#[global_allocator]` of its own builds the
//! layer without its default `zeroed-heap` feature and wraps its
//! allocator in [`ZeroedHeap`] (or loses this).

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the layer is in use: until then (a binary that links the
/// layer but never serves a run, such as `sim` running segsim) an
/// allocation costs one more atomic load and nothing else.
static FILLING: AtomicBool = AtomicBool::new(false);

/// From now on, every allocation through a [`ZeroedHeap`] is filled.
pub fn start_filling() {
    FILLING.store(true, Ordering::Release);
}

fn filling() -> bool {
    FILLING.load(Ordering::Acquire)
}

/// A global allocator that fills every allocation with zeros while the
/// layer is in use (see the module doc): `A`'s memory, `System`'s by
/// default. The layer declares `ZeroedHeap<System>` the process's
/// allocator under its default feature `zeroed-heap`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZeroedHeap<A = System>(pub A);

// SAFETY: every call is `A`'s with the same arguments; the only change is
// that fresh bytes (all of a new allocation, the grown tail of a
// reallocation) are written with zeros before they are handed out.
unsafe impl<A: GlobalAlloc> GlobalAlloc for ZeroedHeap<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on.
        unsafe {
            if filling() {
                self.0.alloc_zeroed(layout)
            } else {
                self.0.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's pointer and layout, passed on.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's arguments, passed on.
        let out = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !out.is_null() && new_size > layout.size() && filling() {
            // SAFETY: `out` holds `new_size` bytes; those past the old
            // size are the fresh tail.
            unsafe { out.add(layout.size()).write_bytes(0, new_size - layout.size()) };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block freed full of a pattern and taken again (the thread's
    /// `tcache` hands the same chunk back) reads zeros once filling is on,
    /// and so does a reallocation's grown tail.
    #[test]
    fn fresh_memory_reads_zeros_whatever_the_heap_held() {
        start_filling();
        let heap = ZeroedHeap(System);
        let layout = Layout::from_size_align(200, 8).expect("a valid layout");
        for _ in 0..100 {
            // SAFETY: a non-zero layout; each block is filled, read and
            // freed within the iteration.
            unsafe {
                let dirty = heap.alloc(layout);
                assert!(!dirty.is_null());
                dirty.write_bytes(0x77, layout.size());
                heap.dealloc(dirty, layout);
                let fresh = heap.alloc(layout);
                let bytes = std::slice::from_raw_parts(fresh, layout.size());
                assert!(bytes.iter().all(|&b| b == 0), "a fresh block kept the freed one's bytes");
                fresh.write_bytes(0x77, layout.size());
                let grown = heap.realloc(fresh, layout, 4000);
                let tail = std::slice::from_raw_parts(grown.add(200), 3800);
                assert!(tail.iter().all(|&b| b == 0), "a grown block's tail kept old bytes");
                heap.dealloc(grown, Layout::from_size_align(4000, 8).expect("a valid layout"));
            }
        }
    }

    /// The same through the process's allocator, as an engine's `Vec`
    /// allocates (the layer's default feature declares it).
    #[cfg(feature = "zeroed-heap")]
    #[test]
    fn the_process_allocator_hands_out_zeros() {
        start_filling();
        for _ in 0..100 {
            drop(vec![0x77u8; 300]);
            let mut fresh: Vec<u8> = Vec::with_capacity(300);
            // SAFETY: the capacity is 300 bytes; the allocator filled them.
            let bytes = unsafe { std::slice::from_raw_parts(fresh.as_mut_ptr(), 300) };
            assert!(bytes.iter().all(|&b| b == 0), "a fresh Vec's memory kept a freed one's bytes");
        }
    }
}
