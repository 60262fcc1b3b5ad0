//! Reading a script file: a regular file of bounded size, opened without
//! blocking, so what is named as a script can never hang or flood the
//! runner.

use std::path::Path;

/// The most of a script file read: far above any strategy (the examples
/// are a few KiB), far below what would hurt the runner's memory.
pub const MAX_SCRIPT_BYTES: u64 = 1 << 20;

/// Reads a script file: a regular file of at most [`MAX_SCRIPT_BYTES`],
/// opened without blocking, so a FIFO, a device (`/dev/zero`, a terminal)
/// or a huge file named as the script (first or on a swap) is refused with
/// a message and never hangs the runner or fills its memory.
pub(crate) fn read(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let cannot = |e: std::io::Error| format!("cannot read Lua script {}: {e}", path.display());
    // O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        let t = meta.file_type();
        let kind = if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(format!("Lua script {} is {kind}; expected a regular file", path.display()));
    }
    let too_big = || format!("Lua script {} is over {} KiB; expected a script of at most that", path.display(), MAX_SCRIPT_BYTES >> 10);
    if meta.len() > MAX_SCRIPT_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    // Bounded again: the file may grow between the stat and the read.
    file.take(MAX_SCRIPT_BYTES + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > MAX_SCRIPT_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|_| format!("Lua script {} is not UTF-8 text", path.display()))
}

