//! Putting back what `record` changed on the machine, on every way out: the normal path
//! asks for it (and reports what did not stick), an error or Ctrl-C returns early and the drop
//! does it (and says on stderr what did not stick).

/// A change `record` made and puts back.
pub trait Restore {
    /// What stderr says, before each failure, when a drop could not put it back.
    const FAILED: &'static str;
    /// Put it back now; what could not be.
    fn restore(&mut self) -> Vec<String>;
}

/// `T`, put back when dropped unless [`Restoring::restore_now`] already did.
#[derive(Debug)]
pub struct Restoring<T: Restore> {
    change: T,
    restored: bool,
}

impl<T: Restore> Restoring<T> {
    pub fn new(change: T) -> Self {
        Restoring {
            change,
            restored: false,
        }
    }

    /// Put it back now (once: the drop then does nothing); what could not be.
    pub fn restore_now(&mut self) -> Vec<String> {
        self.restored = true;
        self.change.restore()
    }
}

impl<T: Restore> Drop for Restoring<T> {
    fn drop(&mut self) {
        if !self.restored {
            for b in self.restore_now() {
                eprintln!("lockcast record: {}: {b}", T::FAILED);
            }
        }
    }
}
