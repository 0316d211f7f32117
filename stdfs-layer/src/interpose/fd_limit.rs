//! The one fact about the real process the session needs before it hands
//! out fake descriptors: that the kernel never numbers a real one as high.
//! Kept apart from the interposed calls (which route through the session)
//! so the layer's opt-in (`opt_in::install`) can ask it before a session
//! starts: the session stands below the interposition, never above it.

/// Whether every descriptor the kernel can hand this process is below
/// `bound` (the hard `RLIMIT_NOFILE` limit is), so a descriptor numbered
/// from `bound` up never names a real file. Asked before a session starts
/// (`crate::install`, with the session's `FAKE_FD_BASE`).
pub fn real_fds_stay_below(bound: i32) -> bool {
    assert!(bound > 0);
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid `rlimit` to fill.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    got == 0 && limit.rlim_max < bound as u64
}
