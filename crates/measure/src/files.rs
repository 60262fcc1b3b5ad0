//! Files cosched writes for people to read (reports, job output), created
//! so that a link planted where a file goes is never followed.
//!
//! cosched often runs as root (cgroups), and reports and job logs go into
//! directories other users may write to. A symbolic or hard link planted at
//! `index.html` or `job.log` would make root overwrite its target, so a file
//! is created only after removing whatever is at its name, with `O_EXCL |
//! O_NOFOLLOW`: a link put back in between makes the creation fail instead
//! of being followed. Modes are 0644 and 0755 whatever the umask (a report
//! is for others to read, never for them to change), and under sudo the
//! files belong to the invoking user, who asked for them.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of every file cosched writes for people.
pub const FILE_MODE: u32 = 0o644;
/// Mode of every directory cosched creates for them.
pub const DIR_MODE: u32 = 0o755;

fn with_path(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Creates `path` afresh for writing (mode 0644, owned by `owner` when
/// given): a file or link at that name is removed first and never written
/// through. A character device that everyone may write (`/dev/null`,
/// `/dev/tty`) is written into, never replaced: removing `/dev/null` as
/// root and creating a file there (`--svg /dev/null`, which our tests
/// pass) turned every program's `> /dev/null` on the node into writes to
/// one shared file in memory until the next boot, and that file's lock
/// and pages were what openssl-aes's "severe" pairs measured. Any other
/// device, a FIFO or a socket is refused.
pub fn create_file(path: &Path, owner: Option<(u32, u32)>) -> io::Result<File> {
    use std::os::unix::fs::FileTypeExt;
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(io::Error::new(ErrorKind::AlreadyExists, format!("{}: is a directory", path.display())))
        }
        // A device everyone may write, or a link to one (`/dev/stdout` ->
        // /proc/self/fd/1 -> a terminal), is written into: what is opened
        // is checked after opening, so a link swapped in meanwhile to a
        // file is not written through but replaced as below.
        Ok(m) if m.file_type().is_char_device() || m.file_type().is_symlink() => {
            if let Some(f) = writable_device(path) {
                return Ok(f);
            }
            if !m.file_type().is_symlink() {
                return Err(not_a_file(path));
            }
            fs::remove_file(path).map_err(|e| with_path(path, e))?
        }
        Ok(m) if !m.file_type().is_file() => return Err(not_a_file(path)),
        // Removing a symbolic link removes the link, not its target; a hard
        // link loses one name and its other names keep their content.
        Ok(_) => fs::remove_file(path).map_err(|e| with_path(path, e))?,
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(with_path(path, e)),
    }
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| with_path(path, e))?;
    // The umask narrowed (or widened nothing of) the mode given to open;
    // fchmod is not subject to it.
    f.set_permissions(Permissions::from_mode(FILE_MODE)).map_err(|e| with_path(path, e))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&f, Some(uid), Some(gid)).map_err(|e| with_path(path, e))?;
    }
    Ok(f)
}

fn not_a_file(path: &Path) -> io::Error {
    io::Error::new(
        ErrorKind::AlreadyExists,
        format!(
            "{}: is a device, FIFO or socket; cosched writes regular files, or into a device everyone may write such as /dev/null",
            path.display()
        ),
    )
}

/// `path` opened for writing, following links, if what it opens is a
/// character device everyone may write; `None` otherwise (the file opened
/// is closed unwritten).
fn writable_device(path: &Path) -> Option<File> {
    use std::os::unix::fs::FileTypeExt;
    let f = OpenOptions::new().write(true).custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK).open(path).ok()?;
    let m = f.metadata().ok()?;
    (m.file_type().is_char_device() && m.mode() & 0o002 != 0).then_some(f)
}

/// Writes `text` to a fresh file at `path` (see [`create_file`]).
pub fn write_file(path: &Path, text: &[u8], owner: Option<(u32, u32)>) -> io::Result<()> {
    use std::io::Write;
    let mut f = create_file(path, owner)?;
    f.write_all(text).map_err(|e| with_path(path, e))?;
    Ok(())
}

/// Makes `dir` (and missing parents) a directory cosched may write into.
///
/// Directories it creates get mode 0755 and `owner`. An existing `dir` must
/// be a real directory, not a symbolic link, and belong to root, to
/// cosched's user or to `owner`: another user's directory is one whose
/// entries that user can swap at any time.
pub fn create_dir(dir: &Path, owner: Option<(u32, u32)>) -> io::Result<()> {
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
            // SAFETY: geteuid cannot fail and touches no memory.
            let me = unsafe { libc::geteuid() };
            let ok = m.uid() == 0 || m.uid() == me || owner.is_some_and(|(u, _)| u == m.uid());
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
            create_dir(parent, owner)?;
        }
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        // Another process made it meanwhile: check it as an existing one.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return create_dir(dir, owner),
        Err(e) => return Err(with_path(dir, e)),
    }
    fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)).map_err(|e| with_path(dir, e))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::lchown(dir, Some(uid), Some(gid)).map_err(|e| with_path(dir, e))?;
    }
    Ok(())
}
