//! Running a third-party function that may panic on input makai cannot
//! check in full (the LaTeX math layout) without the panic reaching the
//! user: [`catch`] turns it into `None`, and makai's panic hooks (the crash
//! record, the terminal's restoring) leave a panic caught here alone, so
//! the screen is not torn down for a formula shown as its source instead.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    /// How many [`catch`] calls this thread is inside.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
}

/// `f`'s value, or `None` when it panicked (logged at debug level).
pub fn catch<R>(f: impl FnOnce() -> R) -> Option<R> {
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get().saturating_sub(1)));
    result.ok()
}

/// Whether the panic being reported happens inside [`catch`] (the hooks
/// then stay quiet).
pub fn catching() -> bool {
    CATCHING.with(Cell::get) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_catch_is_none_and_the_flag_is_down_after() {
        assert_eq!(catch(|| 7), Some(7));
        let mut inside = false;
        let seen = catch(|| {
            inside = catching();
            panic!("a layout bug");
        });
        assert_eq!(seen, None::<()>);
        assert!(inside);
        assert!(!catching());
    }
}
