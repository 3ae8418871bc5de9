//! Noticing that the terminal went away.
//!
//! A terminal whose other side closes (a terminal window closed, an SSH
//! connection dropped, a pseudo-terminal's owner gone) normally sends the
//! session a SIGHUP, which ends makai. When it does not reach makai (makai is
//! not in the terminal's session, or a wrapper keeps the signal), the
//! keyboard's reader reads end-of-file over and over, and crossterm, which
//! reports no end of its input, kept one core busy with it while the UI
//! waited for keys that could not come, for ever. [`hung_up`] has a thread
//! sleep in `poll` until the terminal the keyboard is read from hangs up
//! (`POLLHUP`): the UI then ends, saving what it has, as if the SIGHUP had
//! come.

use std::io::IsTerminal;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// The terminal the keyboard is read from: standard input when it is one,
/// else the process's terminal (as crossterm chooses).
fn keyboard_terminal() -> std::io::Result<OwnedFd> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        stdin.as_fd().try_clone_to_owned()
    } else {
        Ok(std::fs::File::open("/dev/tty")?.into())
    }
}

/// Resolves when the keyboard's terminal hangs up; never when it cannot be
/// watched.
pub async fn hung_up() {
    match keyboard_terminal() {
        Ok(fd) => hung_up_on(fd).await,
        Err(_) => std::future::pending().await,
    }
}

/// Resolves when `fd` (a terminal, or anything `poll` reports a hang-up on)
/// hangs up; never when it cannot be watched. A thread of its own waits in
/// `poll` for no event at all, which returns only for a hang-up or an error
/// of the file: input for the keyboard's reader wakes nobody.
pub async fn hung_up_on(fd: OwnedFd) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let watcher = std::thread::Builder::new()
        .name("makai-hangup".into())
        .spawn(move || {
            if wait_for_hang_up(&fd) {
                let _ = tx.send(());
            }
        });
    if watcher.is_ok() && rx.await.is_ok() {
        return;
    }
    std::future::pending().await
}

/// Blocks until `fd` hangs up (true), or until it cannot be waited on.
fn wait_for_hang_up(fd: &OwnedFd) -> bool {
    let gone = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
    loop {
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::empty())];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {
                if fds[0].revents().is_some_and(|r| r.intersects(gone)) {
                    return true;
                }
            }
            Err(Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_pseudo_terminal_hangs_up_when_its_other_side_closes_and_not_on_input() {
        let pty = nix::pty::openpty(None, None).unwrap();
        let master = std::fs::File::from(pty.master);
        let watch = tokio::spawn(hung_up_on(pty.slave));
        // Input for the terminal is not a hang-up.
        std::io::Write::write_all(&mut &master, b"typed\r").unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!watch.is_finished());
        drop(master);
        tokio::time::timeout(Duration::from_secs(10), watch)
            .await
            .expect("the hang-up was noticed")
            .unwrap();
    }
}
