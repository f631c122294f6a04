//! The lib tests' allocator: the system's, counting the bytes each thread holds, so a test can
//! measure what a value keeps on the heap (tests run on threads of their own, so one test's
//! count is not another's). Only in `cargo test` builds of the library.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static HELD: Cell<i64> = const { Cell::new(0) };
}

struct Counting;

fn add(bytes: usize, sign: i64) {
    let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
    let _ = HELD.try_with(|held| held.set(held.get() + sign * bytes));
}

// SAFETY: every call is passed through to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size(), 1);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(layout.size(), -1);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size(), 1);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(layout.size(), -1);
        add(new_size, 1);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The heap bytes `make`'s result holds: what this thread allocated while making it and did
/// not free, the value still alive.
pub(crate) fn held_by<T>(make: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.with(Cell::get);
    let value = make();
    let after = HELD.with(Cell::get);
    (value, usize::try_from(after - before).unwrap_or(0))
}
