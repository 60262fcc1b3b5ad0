//! Files cosched writes and reads on someone's behalf (reports, traces,
//! exports, figures, job output): one rule for all of them.
//!
//! cosched often runs as root (cgroups), usually through sudo, and the paths
//! it writes are named by the user who invoked it (`--out`, `--trace`,
//! `--report`, a job's `output`). Root may write anywhere; that user may
//! not. So under sudo every open, create, truncate, unlink and chmod of such
//! a path is done with the invoking user's filesystem identity (uid, gid and
//! supplementary groups), and the kernel refuses what that user could not
//! do: a root-only file named as `--out` stays root's, byte for byte.
//!
//! How: a short-lived thread switches only its own credentials with raw
//! `setgroups` / `setresgid` / `setresuid` system calls, does the open and
//! hands the descriptor back (descriptors belong to the process, not the
//! thread). glibc's `setuid` family would change every thread of cosched
//! (POSIX wants process-wide credentials, glibc signals each thread to
//! comply), and a forked helper could run only async-signal-safe code before
//! exec, not the path checks below; a thread runs them as ordinary Rust.
//! The thread sets real, effective and saved ids, so it holds no capability
//! at all and has no way back to root: a mistake in the code it runs acts as
//! the user. It ends right after, taking its credentials with it.
//!
//! The rule for a file (see [`create_file`]):
//! - nothing is deleted to make room: an existing regular file is truncated
//!   in place, and, when cosched is not acting for a sudo user, only if it
//!   belongs to cosched's own user and has a single name (a hard link
//!   planted in a directory others can write would make cosched truncate
//!   its target);
//! - a symbolic link is never written through: the link itself (a name, not
//!   data) is removed, as the user, and a new file created with `O_EXCL |
//!   O_NOFOLLOW`, so a link put back in between makes the creation fail;
//! - a character device everyone may write (`/dev/null`, `/dev/tty`), or a
//!   link to one (`/dev/stdout`), is written into, never replaced; any other
//!   device, a FIFO or a socket is refused;
//! - new files get mode 0644 whatever the umask (a report is for others to
//!   read, never for them to change), directories 0755; an existing file
//!   keeps its mode and owner.
//!
//! Paths cosched chooses itself in its own data directory (a run's default
//! job logs under `~root/.local/share/cosched/runs/`, which the user may not
//! even reach) are made by cosched and handed to the user
//! ([`create_own_file`], [`create_own_dir`]); there an existing file must
//! belong to cosched's user or to that user and have a single name.
//!
//! Reading back (a job's output, for its report line and failure tail) is
//! bounded the same way: regular files only, never a device or a FIFO,
//! opened non-blocking as the user, and only the last [`TAIL_BYTES`].

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of every file cosched creates for people.
pub const FILE_MODE: u32 = 0o644;
/// Mode of every directory cosched creates for them.
pub const DIR_MODE: u32 = 0o755;
/// How much of a job's output is read back: its last 64 KiB.
pub const TAIL_BYTES: u64 = 64 << 10;
/// Characters of one output line shown in a failure tail; the rest is cut
/// with a marker.
pub const LINE_CHARS: usize = 400;

fn with_path(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn euid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// Runs `f` with `user`'s filesystem identity when cosched is root and acts
/// for a user (under sudo); else as cosched itself, which has no privilege
/// to lend.
pub fn as_user<T: Send>(user: Option<(u32, u32)>, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    let Some((uid, gid)) = user.filter(|_| euid() == 0) else { return f() };
    // Computed here, before the switch: the lookup may need NSS files the
    // user cannot read.
    let groups = groups_of(uid, gid);
    std::thread::scope(|s| {
        s.spawn(move || {
            become_user(uid, gid, &groups)?;
            f()
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Switches the calling thread, and only it, to `uid`, `gid` and `groups`
/// for good.
fn become_user(uid: u32, gid: u32, groups: &[libc::gid_t]) -> io::Result<()> {
    let check = |r: libc::c_long| if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) };
    // SAFETY: raw system calls on this thread's credentials only; `groups`
    // is a live slice whose length is passed with it. Groups and gid go
    // first: once the uid is the user's, no capability is left to set them.
    unsafe {
        check(libc::syscall(libc::SYS_setgroups, groups.len() as libc::c_long, groups.as_ptr()))?;
        check(libc::syscall(libc::SYS_setresgid, gid as libc::c_long, gid as libc::c_long, gid as libc::c_long))?;
        check(libc::syscall(libc::SYS_setresuid, uid as libc::c_long, uid as libc::c_long, uid as libc::c_long))?;
    }
    Ok(())
}

/// The supplementary groups of `uid` (with `gid`), as `sudo -u` or a login
/// gives them; just `gid` for a uid with no passwd entry. Remembered: a
/// report writes many files, and group databases may be remote.
fn groups_of(uid: u32, gid: u32) -> Vec<libc::gid_t> {
    type Known = Option<((u32, u32), Vec<libc::gid_t>)>;
    static SEEN: std::sync::Mutex<Known> = std::sync::Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((k, g)) = seen.as_ref() {
        if *k == (uid, gid) {
            return g.clone();
        }
    }
    let groups = crate::launch::user_entry(uid)
        .and_then(|u| std::ffi::CString::new(u.name).ok())
        .and_then(|name| {
            let mut n: libc::c_int = 64;
            loop {
                let mut buf = vec![0 as libc::gid_t; n as usize];
                let cap = n;
                // SAFETY: `name` is a C string, `buf` holds `n` gids and
                // `n` is passed by pointer for getgrouplist to update.
                let r = unsafe { libc::getgrouplist(name.as_ptr(), gid, buf.as_mut_ptr(), &mut n) };
                if r >= 0 {
                    buf.truncate(n.max(0) as usize);
                    return Some(buf);
                }
                if n <= cap {
                    // -1 without a larger count: give up on the list.
                    return None;
                }
            }
        })
        .unwrap_or_else(|| vec![gid]);
    *seen = Some(((uid, gid), groups.clone()));
    groups
}

/// Opens `path` for writing, for `user` (the invoking sudo user; `None`:
/// cosched's own), by the rule of this module: a regular file is
/// truncated in place, a symbolic link is replaced by a new file, a device
/// everyone may write is written into, and nothing else is touched.
///
/// Devices: removing `/dev/null` as root and creating a file there (`--svg
/// /dev/null`, which our tests pass) turned every program's `> /dev/null`
/// on the node into writes to one shared file in memory until the next
/// boot, and that file's lock and pages were what openssl-aes's "severe"
/// pairs measured.
pub fn create_file(path: &Path, user: Option<(u32, u32)>) -> io::Result<File> {
    let for_user = user.is_some() && euid() == 0;
    as_user(user, || open_for_writing(path, for_user, None)).map_err(|e| match user {
        Some((uid, _)) if for_user && e.kind() == ErrorKind::PermissionDenied => {
            io::Error::new(e.kind(), format!("{}: {e} (opened as uid {uid}, the user who invoked sudo)", path.display()))
        }
        _ => with_path(path, e),
    })
}

/// Opens `path`, a name cosched chose in a directory of its own, as
/// cosched (root), by the rule of [`create_file`]; an existing file may
/// also belong to `owner`, and a new one is handed to `owner`.
pub fn create_own_file(path: &Path, owner: Option<(u32, u32)>) -> io::Result<File> {
    let f = open_for_writing(path, false, owner.map(|o| o.0)).map_err(|e| with_path(path, e))?;
    if let Some((uid, gid)) = owner.filter(|_| euid() == 0) {
        let m = f.metadata().map_err(|e| with_path(path, e))?;
        if m.file_type().is_file() && m.uid() != uid {
            std::os::unix::fs::fchown(&f, Some(uid), Some(gid)).map_err(|e| with_path(path, e))?;
        }
    }
    Ok(f)
}

/// Writes `text` to `path` by the rule of [`create_own_file`].
pub fn write_own_file(path: &Path, text: &[u8], owner: Option<(u32, u32)>) -> io::Result<()> {
    use std::io::Write;
    create_own_file(path, owner)?.write_all(text).map_err(|e| with_path(path, e))
}

fn open_for_writing(path: &Path, for_user: bool, also_owner: Option<u32>) -> io::Result<File> {
    // A name that changes under us (a link put back, a file made) is looked
    // at again, a few times, never written through.
    for _ in 0..4 {
        match fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => return Err(io::Error::new(ErrorKind::AlreadyExists, "is a directory")),
            Ok(m) if m.file_type().is_char_device() || m.file_type().is_symlink() => {
                if let Some(f) = writable_device(path)? {
                    return Ok(f);
                }
                if !m.file_type().is_symlink() {
                    return Err(not_a_file());
                }
                // The link is a name only; its target is never opened for
                // writing. Removing it needs write permission on its
                // directory, which the kernel checks for the user.
                match fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(io::Error::new(e.kind(), format!("a symbolic link is at this name and cannot be replaced: {e}"))),
                }
            }
            Ok(m) if m.file_type().is_file() => match truncate_in_place(path, for_user, also_owner) {
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) || e.raw_os_error() == Some(libc::ELOOP) => continue,
                r => return r,
            },
            Ok(_) => return Err(not_a_file()),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(FILE_MODE)
            .open(path);
        match created {
            Ok(f) => {
                // The umask narrowed the mode given to open; fchmod is not
                // subject to it. The file is ours (or the user's), so this
                // needs no privilege.
                f.set_permissions(Permissions::from_mode(FILE_MODE))?;
                return Ok(f);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("the name kept changing while cosched opened it; nothing was written"))
}

/// Opens the regular file at `path` without following a link, checks what
/// was opened and empties it.
fn truncate_in_place(path: &Path, for_user: bool, also_owner: Option<u32>) -> io::Result<File> {
    // O_NONBLOCK: if a FIFO was swapped in, opening it for writing fails
    // (no reader) or returns at once, instead of waiting for a reader.
    let f = OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)?;
    let m = f.metadata()?;
    if !m.file_type().is_file() {
        return Err(not_a_file());
    }
    if !for_user {
        // Acting as ourselves, the kernel's permission check is no check
        // when we are root: only our own file, under one name.
        if m.uid() != euid() && Some(m.uid()) != also_owner {
            return Err(io::Error::new(
                ErrorKind::PermissionDenied,
                format!("belongs to uid {}, not to you; cosched overwrites only your own files (remove it or pass another name)", m.uid()),
            ));
        }
        if m.nlink() > 1 {
            return Err(io::Error::new(
                ErrorKind::AlreadyExists,
                format!("has {} names (hard links); cosched overwrites only a file of one name, so as not to change another name's content", m.nlink()),
            ));
        }
    }
    f.set_len(0)?;
    Ok(blocking(f))
}

/// `f` back to blocking writes once opened: O_NONBLOCK was only for the
/// open, and a job writing to a terminal must not get EAGAIN.
fn blocking(f: File) -> File {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
    // SAFETY: fcntl on a descriptor we own, changing only its status flags.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    f
}

fn not_a_file() -> io::Error {
    io::Error::new(
        ErrorKind::AlreadyExists,
        "is a device, FIFO or socket; cosched writes regular files, or into a device everyone may write such as /dev/null",
    )
}

/// `path` opened for writing, following links, if it is a character
/// device everyone may write; `None` otherwise (a file opened is closed
/// unwritten). Looked at before opening, so no other device is opened at
/// all (opening a tape rewinds it), and again after, as what was opened.
/// Such a device that does not open (`/dev/tty` without a terminal) is an
/// error saying so.
fn writable_device(path: &Path) -> io::Result<Option<File>> {
    let everyone = |m: &fs::Metadata| m.file_type().is_char_device() && m.mode() & 0o002 != 0;
    if !fs::metadata(path).is_ok_and(|m| everyone(&m)) {
        return Ok(None);
    }
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("a device everyone may write, but it cannot be opened: {e}")))?;
    Ok(f.metadata().is_ok_and(|m| everyone(&m)).then(|| blocking(f)))
}

/// Opens `path` for reading and writing as `user` (creating it, empty,
/// when missing and `create`), then closes it: the check that a database
/// file SQLite will open as root is one the user could open. A link, a
/// device or a FIFO is refused; nothing is truncated.
pub fn open_database_as(path: &Path, user: (u32, u32), create: bool) -> io::Result<()> {
    as_user(Some(user), || {
        let mut o = OpenOptions::new();
        o.read(true).write(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
        match fs::symlink_metadata(path) {
            Ok(m) if !m.file_type().is_file() => Err(io::Error::new(ErrorKind::InvalidInput, "not a regular file")),
            Ok(_) => o.open(path).map(drop),
            Err(e) if e.kind() == ErrorKind::NotFound && create => o.create_new(true).mode(FILE_MODE).open(path).map(drop),
            Err(e) => Err(e),
        }
    })
}

/// Writes `text` to `path` by the rule of [`create_file`].
pub fn write_file(path: &Path, text: &[u8], user: Option<(u32, u32)>) -> io::Result<()> {
    use std::io::Write;
    let mut f = create_file(path, user)?;
    f.write_all(text).map_err(|e| with_path(path, e))?;
    Ok(())
}

/// Makes `dir` (and missing parents) a directory cosched may write into,
/// for `user` as [`create_file`] does.
///
/// Directories it creates get mode 0755 and belong to whoever they are
/// made for. An existing `dir` must be a real directory, not a symbolic
/// link, and belong to root, to cosched's user or to `user`: another user's
/// directory is one whose entries that user can swap at any time.
pub fn create_dir(dir: &Path, user: Option<(u32, u32)>) -> io::Result<()> {
    let me = euid();
    as_user(user, || make_dir(dir, me, user, false))
}

/// Makes `dir` (and missing parents), a directory cosched chose for itself
/// (its data directory), as cosched, handing those it creates to `owner`.
pub fn create_own_dir(dir: &Path, owner: Option<(u32, u32)>) -> io::Result<()> {
    make_dir(dir, euid(), owner, euid() == 0)
}

fn make_dir(dir: &Path, me: u32, user: Option<(u32, u32)>, hand_over: bool) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(io::Error::new(
                ErrorKind::AlreadyExists,
                format!("{}: is a symbolic link; cosched writes only into real directories", dir.display()),
            ))
        }
        Ok(m) if !m.is_dir() => {
            return Err(io::Error::new(ErrorKind::AlreadyExists, format!("{}: exists and is not a directory", dir.display())))
        }
        Ok(m) => {
            let ok = m.uid() == 0 || m.uid() == me || user.is_some_and(|(u, _)| u == m.uid());
            if !ok {
                return Err(io::Error::new(
                    ErrorKind::PermissionDenied,
                    format!(
                        "{}: belongs to uid {}, not to you; cosched does not write into another user's directory (pass a new directory)",
                        dir.display(),
                        m.uid()
                    ),
                ));
            }
            return Ok(());
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(with_path(dir, e)),
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        if fs::symlink_metadata(parent).is_err() {
            make_dir(parent, me, user, hand_over)?;
        }
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        // Another process made it meanwhile: check it as an existing one.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return make_dir(dir, me, user, hand_over),
        Err(e) => return Err(with_path(dir, e)),
    }
    // Opened without following a link, so the chmod reaches the directory
    // just made even if its name was swapped meanwhile.
    let d = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| with_path(dir, e))?;
    d.set_permissions(Permissions::from_mode(DIR_MODE)).map_err(|e| with_path(dir, e))?;
    if let Some((uid, gid)) = user.filter(|_| hand_over) {
        std::os::unix::fs::fchown(&d, Some(uid), Some(gid)).map_err(|e| with_path(dir, e))?;
    }
    Ok(())
}

/// The end of a file read back: at most [`TAIL_BYTES`], whole lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The text read, from the first whole line after the cut (or from the
    /// start of the file).
    pub text: String,
    /// Bytes before `text` that were not read (0: the whole file).
    pub skipped: u64,
    /// Why nothing was read, when the path is not a regular file.
    pub not_read: Option<String>,
}

impl Tail {
    /// The last `n` lines, each cut to [`LINE_CHARS`] characters with a
    /// marker saying how much was left out.
    pub fn last_lines(&self, n: usize) -> String {
        let lines: Vec<&str> = self.text.lines().collect();
        lines[lines.len().saturating_sub(n)..].iter().map(|l| cut_line(l, LINE_CHARS)).collect::<Vec<_>>().join("\n")
    }
}

/// `line` cut to `max` characters, with `... [N more bytes]` after the cut.
pub fn cut_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        None => line.to_string(),
        Some((at, _)) => format!("{} ... [{} more bytes]", &line[..at], line.len() - at),
    }
}

/// The last [`TAIL_BYTES`] of the regular file at `path`, read as `user`:
/// a device (`/dev/zero`, `/dev/tty`), a FIFO, a socket or a symbolic link
/// is not opened at all, and the open is non-blocking, so a FIFO swapped in
/// at the last moment cannot make cosched wait for a writer. A line cut by
/// the 64 KiB window is dropped, so a report line is either whole or
/// absent; when the window holds the end of one line only, that end is
/// kept behind a `[... N bytes cut]` marker.
pub fn read_tail(path: &Path, user: Option<(u32, u32)>) -> Tail {
    read_tail_bounded(path, user, None, TAIL_BYTES)
}

/// [`read_tail`] of a file cosched made in its own directory for `owner`
/// ([`create_own_file`]), read as cosched: it must belong to cosched's user
/// or `owner` and have a single name, so that nothing else is shown as a
/// job's output.
pub fn read_own_tail(path: &Path, owner: Option<(u32, u32)>) -> Tail {
    read_tail_bounded(path, None, Some(owner.map(|o| o.0)), TAIL_BYTES)
}

fn read_tail_bounded(path: &Path, user: Option<(u32, u32)>, own: Option<Option<u32>>, limit: u64) -> Tail {
    let not_read = |why: String| Tail { not_read: Some(why), ..Tail::default() };
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => {}
        Ok(m) => return not_read(format!("{}: {}; not read back", path.display(), kind_of(&m))),
        Err(e) => return not_read(format!("{}: {e}", path.display())),
    }
    let read = as_user(user, || {
        let mut f = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)?;
        let m = f.metadata()?;
        if !m.file_type().is_file() {
            return Ok(None);
        }
        if let Some(owner) = own {
            if (m.uid() != euid() && Some(m.uid()) != owner) || m.nlink() > 1 {
                return Ok(None);
            }
        }
        let start = m.len().saturating_sub(limit);
        f.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(limit.min(m.len()) as usize);
        // `take`: the file may grow while it is read (a job's leftover).
        f.take(limit).read_to_end(&mut buf)?;
        Ok(Some((start, buf)))
    });
    match read {
        Ok(Some((0, buf))) => Tail { text: String::from_utf8_lossy(&buf).into_owned(), skipped: 0, not_read: None },
        Ok(Some((start, buf))) => match buf.iter().position(|&b| b == b'\n') {
            // The first line began before the window: dropped.
            Some(p) if p + 1 < buf.len() => {
                Tail { text: String::from_utf8_lossy(&buf[p + 1..]).into_owned(), skipped: start + p as u64 + 1, not_read: None }
            }
            // The whole window is the end of one long line: kept, marked
            // (the marker starts no JSON report line).
            _ => Tail { text: format!("[... {start} bytes cut] {}", String::from_utf8_lossy(&buf)), skipped: start, not_read: None },
        },
        Ok(None) => not_read(format!("{}: not a regular file of its own; not read back", path.display())),
        Err(e) => not_read(format!("{}: {e}", path.display())),
    }
}

fn kind_of(m: &fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a directory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_own_file_is_truncated_in_place_keeping_its_inode_and_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.csv");
        fs::write(&p, "old content that is longer").unwrap();
        fs::set_permissions(&p, Permissions::from_mode(0o600)).unwrap();
        let ino = fs::metadata(&p).unwrap().ino();
        write_file(&p, b"new", None).unwrap();
        let m = fs::metadata(&p).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(m.ino(), ino, "nothing was deleted to make room");
        assert_eq!(m.permissions().mode() & 0o7777, 0o600, "an existing file keeps its mode");
    }

    #[test]
    fn a_file_with_a_second_name_is_refused_and_left_as_it_was() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("precious"), d.path().join("report.html"));
        fs::write(&a, "keep").unwrap();
        fs::hard_link(&a, &b).unwrap();
        let e = write_file(&b, b"x", None).unwrap_err().to_string();
        assert!(e.contains("report.html") && e.contains("2 names"), "{e}");
        assert_eq!(fs::read_to_string(&a).unwrap(), "keep");
    }

    #[test]
    fn a_symbolic_link_is_replaced_by_a_new_file_and_its_target_kept() {
        let d = tempfile::tempdir().unwrap();
        let (target, link) = (d.path().join("precious"), d.path().join("trace.csv"));
        fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file(&link, b"trace", None).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_file());
        assert_eq!(fs::read_to_string(&link).unwrap(), "trace");
    }

    #[test]
    fn a_tail_is_bounded_drops_the_line_cut_by_its_window_and_cuts_long_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        let long = "y".repeat(1000);
        fs::write(&p, format!("{}\nfirst\n{long}\n{{\"wall_s\": 1.5}}\n", "x".repeat(100))).unwrap();
        let t = read_tail_bounded(&p, None, None, 1030);
        assert!(!t.text.contains('x'), "the partial first line is dropped: {:?}", &t.text[..20]);
        assert!(t.text.ends_with("{\"wall_s\": 1.5}\n"));
        assert_eq!(t.skipped + t.text.len() as u64, fs::metadata(&p).unwrap().len());
        let shown = t.last_lines(2);
        assert_eq!(shown, format!("{} ... [600 more bytes]\n{{\"wall_s\": 1.5}}", "y".repeat(400)));
        assert_eq!(read_tail_bounded(&p, None, None, 1 << 20).skipped, 0);
        fs::write(&p, format!("{long}\n")).unwrap();
        let t = read_tail_bounded(&p, None, None, 100);
        assert_eq!(t.text, format!("[... 901 bytes cut] {}\n", "y".repeat(99)));
        assert_eq!(cut_line("äöü", 2), "äö ... [2 more bytes]");
    }

    #[test]
    fn devices_fifos_and_links_are_never_read_back() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let link = d.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        for p in [Path::new("/dev/zero"), Path::new("/dev/full"), Path::new("/dev/tty"), &fifo, &link] {
            let t = read_tail(p, None);
            assert_eq!(t.text, "", "{}", p.display());
            assert!(t.not_read.as_deref().is_some_and(|w| w.contains("not read back")), "{}: {:?}", p.display(), t.not_read);
        }
    }
}
