//! Two ways `tlog`'s flusher can wait for work that the stdfs layer's
//! scheduler cannot schedule (plants `eventfd-wait` and `spin-wait`).
//! Neither is a bug of the engine — each works on a real system — but
//! each would stop the one thread holding the scheduler's baton for good:
//! a `poll` on an eventfd blocks in the kernel, and a spin on an atomic
//! never reaches a call the layer sees. The layer must end such a run
//! with its own message (`unknown blocking call: …`, `spinning thread:
//! …`) and let the sweep go on; these plants are how a sweep shows it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// An eventfd the clients signal and the flusher polls.
pub struct EventFd(File);

impl EventFd {
    #[allow(unsafe_code)]
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: `eventfd` takes plain integers.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just made, owned by nothing else.
        Ok(EventFd(File::from(unsafe { OwnedFd::from_raw_fd(fd) })))
    }

    /// Add one to the counter: the flusher's poll returns.
    pub fn signal(&self) {
        let _ = (&self.0).write(&1u64.to_ne_bytes());
    }

    /// Wait until the counter is not zero, then take it.
    #[allow(unsafe_code)]
    pub fn wait(&self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut ready = libc::pollfd { fd: self.0.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid `pollfd`, no timeout.
        if unsafe { libc::poll(&mut ready, 1, -1) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut count = [0u8; 8];
        (&self.0).read_exact(&mut count)
    }
}

/// Spin until `flag` is raised, and lower it.
pub fn spin_until(flag: &AtomicBool) {
    while !flag.swap(false, Ordering::SeqCst) {
        std::hint::spin_loop();
    }
}
