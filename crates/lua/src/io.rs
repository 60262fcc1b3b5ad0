//! What `grant=io` and `grant=all` give a script beyond Luau's libraries.
//!
//! Luau has no `io` library and no way to load code from a file or string
//! at run time, so these are written here, as a small part of Lua 5.4's:
//! `io.open`, `io.lines`, `io.read`, `io.write`, `io.close`, `io.stdin`,
//! `io.stdout`, `io.stderr`, and a file's `read`, `lines`, `write`, `seek`,
//! `flush` and `close`; with `all`, `load`, `loadstring`, `loadfile` and
//! `dofile` (text only: Luau does not check bytecode, so a binary chunk
//! could break the VM). docs/lua.md lists what is left out.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};

use mlua::{AnyUserData, ChunkMode, Function, Lua, MultiValue, Table, UserData, UserDataMethods, Value, Variadic};

enum Stream {
    /// Read through the buffer; a write first drops what the buffer read
    /// ahead (a seek to the current position), so "r+" files stay in step.
    File(BufReader<File>),
    Stdin,
    Stdout,
    Stderr,
}

/// A file as scripts see it (`io.type` would say "file").
pub struct LuaFile {
    stream: Option<Stream>,
}

impl LuaFile {
    fn stream(&mut self) -> mlua::Result<&mut Stream> {
        self.stream.as_mut().ok_or_else(|| mlua::Error::runtime("attempt to use a closed file"))
    }
}

/// One of `read`'s formats.
enum Format {
    Line { keep: bool },
    All,
    Number,
    Bytes(usize),
}

fn format(k: usize, v: &Value) -> mlua::Result<Format> {
    match v {
        Value::Integer(n) if *n >= 0 => Ok(Format::Bytes(*n as usize)),
        Value::Number(n) if *n >= 0.0 && n.fract() == 0.0 => Ok(Format::Bytes(*n as usize)),
        Value::String(s) => match s.as_bytes().strip_prefix(b"*").unwrap_or(&s.as_bytes()).first() {
            Some(b'l') => Ok(Format::Line { keep: false }),
            Some(b'L') => Ok(Format::Line { keep: true }),
            Some(b'a') => Ok(Format::All),
            Some(b'n') => Ok(Format::Number),
            _ => Err(mlua::Error::runtime(format!("bad argument #{k} to 'read' (invalid format)"))),
        },
        _ => Err(mlua::Error::runtime(format!("bad argument #{k} to 'read' (invalid format)"))),
    }
}

/// The characters a numeral may hold; `tonumber` decides what they mean.
fn numeral(c: u8) -> bool {
    c.is_ascii_hexdigit() || matches!(c, b'+' | b'-' | b'.' | b'x' | b'X' | b'p' | b'P')
}

/// Reads one item; `None` at the end of the file (Lua's `nil`).
fn read_one(lua: &Lua, r: &mut dyn BufRead, f: &Format) -> mlua::Result<Value> {
    let bytes = |b: Vec<u8>| lua.create_string(b).map(Value::String);
    match *f {
        Format::Line { keep } => {
            let mut b = Vec::new();
            if r.read_until(b'\n', &mut b)? == 0 {
                return Ok(Value::Nil);
            }
            if !keep && b.last() == Some(&b'\n') {
                b.pop();
            }
            bytes(b)
        }
        Format::All => {
            let mut b = Vec::new();
            r.read_to_end(&mut b)?;
            bytes(b)
        }
        Format::Bytes(0) => {
            if r.fill_buf()?.is_empty() {
                Ok(Value::Nil)
            } else {
                bytes(Vec::new())
            }
        }
        Format::Bytes(n) => {
            let mut b = Vec::new();
            r.take(n as u64).read_to_end(&mut b)?;
            if b.is_empty() {
                Ok(Value::Nil)
            } else {
                bytes(b)
            }
        }
        Format::Number => {
            // Blanks, then the longest run of numeral characters (at most
            // 200, as Lua), taken from the buffer without reading past it.
            loop {
                let buf = r.fill_buf()?;
                let n = buf.iter().take_while(|c| c.is_ascii_whitespace()).count();
                let end = n == buf.len();
                r.consume(n);
                if !end || n == 0 {
                    break;
                }
            }
            let mut b = Vec::new();
            while b.len() < 200 {
                let buf = r.fill_buf()?;
                match buf.first() {
                    Some(&c) if numeral(c) => {
                        b.push(c);
                        r.consume(1);
                    }
                    _ => break,
                }
            }
            let text = String::from_utf8_lossy(&b);
            let tonumber: Function = lua.globals().raw_get("tonumber")?;
            match tonumber.call::<Value>(text.as_ref())? {
                Value::Nil => Ok(Value::Nil),
                v => Ok(v),
            }
        }
    }
}

/// `read(fmt...)` on a file or stdin: one value per format, stopping at the
/// first that finds nothing.
fn read(lua: &Lua, file: &mut LuaFile, fmts: &[Value]) -> mlua::Result<MultiValue> {
    let fmts: Vec<Format> = if fmts.is_empty() {
        vec![Format::Line { keep: false }]
    } else {
        fmts.iter().enumerate().map(|(k, v)| format(k + 1, v)).collect::<mlua::Result<_>>()?
    };
    let stdin = std::io::stdin();
    let mut lock;
    let r: &mut dyn BufRead = match file.stream()? {
        Stream::File(f) => f,
        Stream::Stdin => {
            lock = stdin.lock();
            &mut lock
        }
        Stream::Stdout | Stream::Stderr => return Err(mlua::Error::runtime("cannot read an output file")),
    };
    let mut out = Vec::with_capacity(fmts.len());
    for f in &fmts {
        let v = read_one(lua, r, f)?;
        let end = v.is_nil();
        out.push(v);
        if end {
            break;
        }
    }
    Ok(MultiValue::from_iter(out))
}

/// `write(...)`: strings and numbers (as `tostring` writes them).
fn write(file: &mut LuaFile, args: &[Value]) -> mlua::Result<()> {
    let mut b = Vec::new();
    for (k, v) in args.iter().enumerate() {
        match v {
            Value::String(s) => b.extend_from_slice(&s.as_bytes()),
            Value::Integer(_) | Value::Number(_) => b.extend_from_slice(v.to_string()?.as_bytes()),
            other => return Err(mlua::Error::runtime(format!("bad argument #{} to 'write' (string expected, got {})", k + 1, other.type_name()))),
        }
    }
    match file.stream()? {
        Stream::File(f) => {
            // A seek, not `stream_position`: only a seek drops what the
            // buffer read ahead, so the write lands where reading stopped.
            #[allow(clippy::seek_from_current)]
            f.seek(SeekFrom::Current(0))?;
            f.get_mut().write_all(&b)?;
        }
        Stream::Stdout => std::io::stdout().lock().write_all(&b)?,
        Stream::Stderr => std::io::stderr().lock().write_all(&b)?,
        Stream::Stdin => return Err(mlua::Error::runtime("cannot write to an input file")),
    }
    Ok(())
}

/// A function that reads `fmts` from `file` at each call, and closes it at
/// the end if `close`, for `for line in f:lines() do`.
fn lines(lua: &Lua, file: AnyUserData, fmts: Vec<Value>, close: bool) -> mlua::Result<Function> {
    lua.create_function(move |lua, ()| {
        let mut f = file.borrow_mut::<LuaFile>()?;
        let v = read(lua, &mut f, &fmts)?;
        if close && v.front().is_none_or(Value::is_nil) {
            f.stream = None;
        }
        Ok(v)
    })
}

impl UserData for LuaFile {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut("read", |lua, this, fmts: Variadic<Value>| read(lua, this, &fmts));
        m.add_function("write", |_, (ud, args): (AnyUserData, Variadic<Value>)| {
            write(&mut *ud.borrow_mut::<LuaFile>()?, &args)?;
            Ok(ud)
        });
        m.add_function("lines", |lua, (ud, fmts): (AnyUserData, Variadic<Value>)| {
            ud.borrow_mut::<LuaFile>()?.stream()?;
            lines(lua, ud, fmts.to_vec(), false)
        });
        m.add_method_mut("seek", |_, this, (whence, offset): (Option<String>, Option<i64>)| {
            let offset = offset.unwrap_or(0);
            let to = match whence.as_deref().unwrap_or("cur") {
                "set" => SeekFrom::Start(offset.max(0) as u64),
                "cur" => SeekFrom::Current(offset),
                "end" => SeekFrom::End(offset),
                other => return Err(mlua::Error::runtime(format!("bad argument #1 to 'seek' (invalid option '{other}')"))),
            };
            match this.stream()? {
                Stream::File(f) => Ok(f.seek(to)? as f64),
                _ => Err(mlua::Error::runtime("cannot seek a standard file")),
            }
        });
        m.add_method_mut("flush", |_, this, ()| {
            match this.stream()? {
                Stream::Stdout => std::io::stdout().flush()?,
                Stream::Stderr => std::io::stderr().flush()?,
                // Writes to files are not buffered here.
                Stream::File(_) | Stream::Stdin => {}
            }
            Ok(true)
        });
        m.add_method_mut("close", |_, this, ()| close(this));
        m.add_meta_method("__tostring", |_, this, ()| Ok(if this.stream.is_some() { "file" } else { "file (closed)" }));
    }
}

fn close(file: &mut LuaFile) -> mlua::Result<(Value, Option<String>)> {
    match file.stream()? {
        Stream::File(_) => {
            file.stream = None;
            Ok((Value::Boolean(true), None))
        }
        _ => Ok((Value::Nil, Some("cannot close standard file".into()))),
    }
}

/// An OS error as Lua words it: "PATH: No such file or directory".
fn os_error(path: &str, e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    format!("{path}: {text}")
}

fn open(path: &str, mode: &str) -> Result<LuaFile, Result<String, mlua::Error>> {
    let mut o = OpenOptions::new();
    match mode.strip_suffix('b').unwrap_or(mode) {
        "r" => o.read(true),
        "w" => o.write(true).create(true).truncate(true),
        "a" => o.append(true).create(true),
        "r+" => o.read(true).write(true),
        "w+" => o.read(true).write(true).create(true).truncate(true),
        "a+" => o.read(true).append(true).create(true),
        _ => return Err(Err(mlua::Error::runtime(format!("bad argument #2 to 'open' (invalid mode '{mode}')")))),
    };
    o.open(path).map(|f| LuaFile { stream: Some(Stream::File(BufReader::new(f))) }).map_err(|e| Ok(os_error(path, &e)))
}

/// The `io` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let io = lua.create_table()?;
    let stdin = lua.create_userdata(LuaFile { stream: Some(Stream::Stdin) })?;
    let stdout = lua.create_userdata(LuaFile { stream: Some(Stream::Stdout) })?;
    io.raw_set("stderr", lua.create_userdata(LuaFile { stream: Some(Stream::Stderr) })?)?;
    io.raw_set(
        "open",
        lua.create_function(|lua, (path, mode): (String, Option<String>)| match open(&path, mode.as_deref().unwrap_or("r")) {
            Ok(f) => Ok((Value::UserData(lua.create_userdata(f)?), None)),
            Err(Ok(why)) => Ok((Value::Nil, Some(why))),
            Err(Err(e)) => Err(e),
        })?,
    )?;
    let input = stdin.clone();
    io.raw_set(
        "lines",
        lua.create_function(move |lua, (path, fmts): (Option<String>, Variadic<Value>)| match path {
            Some(p) => match open(&p, "r") {
                Ok(f) => lines(lua, lua.create_userdata(f)?, fmts.to_vec(), true),
                Err(Ok(why)) => Err(mlua::Error::runtime(why)),
                Err(Err(e)) => Err(e),
            },
            None => lines(lua, input.clone(), fmts.to_vec(), false),
        })?,
    )?;
    let input = stdin.clone();
    io.raw_set("read", lua.create_function(move |lua, fmts: Variadic<Value>| read(lua, &mut *input.borrow_mut::<LuaFile>()?, &fmts))?)?;
    let output = stdout.clone();
    io.raw_set(
        "write",
        lua.create_function(move |_, args: Variadic<Value>| {
            write(&mut *output.borrow_mut::<LuaFile>()?, &args)?;
            Ok(output.clone())
        })?,
    )?;
    io.raw_set(
        "close",
        lua.create_function(|_, f: Option<AnyUserData>| match f {
            Some(f) => close(&mut *f.borrow_mut::<LuaFile>()?),
            None => Ok((Value::Nil, Some("cannot close standard file".into()))),
        })?,
    )?;
    io.raw_set("stdin", stdin)?;
    io.raw_set("stdout", stdout)?;
    Ok(io)
}

/// `load`, `loadstring`, `loadfile` and `dofile` as globals of `g`, for
/// `grant=all`: text chunks, run under the script's budget like the rest of
/// it. `load` takes a string (not Lua 5.4's reader function).
pub fn loaders(lua: &Lua, g: &Table) -> mlua::Result<()> {
    fn chunk(lua: &Lua, text: &[u8], name: String, env: Option<Table>) -> (Value, Option<String>) {
        let mut c = lua.load(text).set_name(name).set_mode(ChunkMode::Text);
        if let Some(env) = env {
            c = c.set_environment(env);
        }
        match c.into_function() {
            Ok(f) => (Value::Function(f), None),
            Err(e) => (Value::Nil, Some(crate::policy::message(&e))),
        }
    }
    let load = lua.create_function(|lua, (text, name, _mode, env): (mlua::String, Option<String>, Option<String>, Option<Table>)| {
        let name = name.unwrap_or_else(|| "=(load)".into());
        Ok(chunk(lua, &text.as_bytes(), name, env))
    })?;
    g.raw_set("load", load.clone())?;
    g.raw_set("loadstring", load)?;
    let loadfile = |lua: &Lua, path: &str, env: Option<Table>| -> (Value, Option<String>) {
        match std::fs::read(path) {
            Ok(text) => chunk(lua, &text, format!("@{path}"), env),
            Err(e) => (Value::Nil, Some(format!("cannot open {}", os_error(path, &e)))),
        }
    };
    g.raw_set(
        "loadfile",
        lua.create_function(move |lua, (path, _mode, env): (String, Option<String>, Option<Table>)| Ok(loadfile(lua, &path, env)))?,
    )?;
    g.raw_set(
        "dofile",
        lua.create_function(move |lua, path: String| match loadfile(lua, &path, None) {
            (Value::Function(f), _) => f.call::<MultiValue>(()),
            (_, why) => Err(mlua::Error::runtime(why.unwrap_or_default())),
        })?,
    )?;
    Ok(())
}
