//! An interrupt (Ctrl-C / SIGTERM) stops every wait and leaves no job behind.
//! Its own test binary: the interrupt flag is process-wide.

use cosched_measure::launch::{install_interrupt_handler, live_members, spawn, Launch, LaunchError};

#[test]
fn sigint_ends_the_wait_and_kills_the_job_group() {
    install_interrupt_handler();
    let job = spawn(&Launch::new(vec!["sh".into(), "-c".into(), "sleep 30 & sleep 30".into()])).unwrap();
    let pgid = job.pid();
    // A real signal, as a terminal's Ctrl-C would deliver it to cosched.
    nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).unwrap();
    let err = job.wait().unwrap_err();
    assert!(matches!(err, LaunchError::Interrupted(2)), "{err}");
    assert_eq!(live_members(pgid), Vec::<i32>::new());
}
