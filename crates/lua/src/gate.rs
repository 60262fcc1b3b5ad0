//! The protected call of every decision, made straight through Luau's C
//! API: mlua's protected call (`Lua::exec_raw`) pushes two new C closures
//! each time (its error handler and the call), which the collector then
//! has to free, and pushes its arguments from its reference thread; here
//! the handler, the entry function and the bundle are kept in the
//! registry, made once per state, and a call pushes three of them and a
//! pointer. Errors read as mlua's do: a message with the script's
//! traceback, memory errors as such, and an error a Rust callback raised
//! (an mlua userdata) handed back to mlua to unwrap.

use std::ffi::{c_int, c_void};

use mlua::{ffi, Lua, Table};

/// The body of a call: what runs inside the protected call, with the
/// bundle as the only value on the stack.
pub(crate) type Body<'a> = &'a mut dyn FnMut(*mut ffi::lua_State);

/// A state's way in: its main thread and the registry references of the
/// error handler, the entry function and the bundle (`raw`'s contract).
pub(crate) struct Gate {
    main: *mut ffi::lua_State,
    handler: c_int,
    entry: c_int,
    bundle: c_int,
}

/// Luau's message for a failed allocation (`LUA_MEMERRMSG`), which Luau
/// hands the error handler too.
const MEMORY: &[u8] = b"not enough memory";

/// Whether the value on top of the stack is Luau's memory error message.
unsafe fn is_memory(l: *mut ffi::lua_State) -> bool {
    // SAFETY: reads the top slot's type and string, raising nothing.
    unsafe {
        if ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
            return false;
        }
        let mut len = 0usize;
        let s = ffi::lua_tolstring(l, -1, &mut len);
        !s.is_null() && std::slice::from_raw_parts(s.cast::<u8>(), len) == MEMORY
    }
}

/// The error handler, as mlua's (`error_traceback`): a message gets the
/// traceback of where it was raised; a userdata (an error a Rust callback
/// raised, which mlua unwraps) and a failed allocation go through as they
/// are, since a traceback would allocate again.
unsafe extern "C-unwind" fn handler(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: Luau calls the handler with the error on top; each push is
    // checked for room first, as mlua's handler does.
    unsafe {
        if ffi::lua_type(l, -1) == ffi::LUA_TUSERDATA || is_memory(l) || ffi::lua_checkstack(l, 2) == 0 {
            return 1;
        }
        let s = ffi::luaL_tolstring(l, -1, std::ptr::null_mut());
        if ffi::lua_checkstack(l, ffi::LUA_TRACEBACK_STACK) != 0 {
            ffi::luaL_traceback(l, l, s, 0);
            ffi::lua_remove(l, -2);
        }
    }
    1
}

/// The entry function: argument 1 is a pointer to the call's [`Body`],
/// argument 2 the bundle; the body runs with the bundle alone on the stack.
unsafe extern "C-unwind" fn entry(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: `Gate::call` pushed a pointer to a `Body` that lives on its
    // stack frame until `lua_pcall` returns, which outlasts this call (the
    // 'static is only the erased lifetime of that frame's borrow).
    unsafe {
        let body = &mut *ffi::lua_touserdata(l, 1).cast::<Body<'static>>();
        ffi::lua_remove(l, 1);
        body(l);
    }
    0
}

impl Gate {
    /// The gate of `lua`'s state into `bundle`, made once per state.
    pub(crate) fn new(lua: &Lua, bundle: &Table) -> mlua::Result<Gate> {
        let mut gate = Gate { main: std::ptr::null_mut(), handler: 0, entry: 0, bundle: 0 };
        // SAFETY: the closure runs inside mlua's protected call with the
        // bundle at slot 1; `lua_ref` copies a value into the registry,
        // where it stays as long as the state, which `Script` holds with
        // its gate.
        unsafe {
            lua.exec_raw::<()>(bundle, |l| {
                gate.main = ffi::lua_mainthread(l);
                ffi::lua_rawcheckstack(l, 1);
                gate.bundle = ffi::lua_ref(l, 1);
                ffi::lua_pushcfunction(l, handler);
                gate.handler = ffi::lua_ref(l, -1);
                ffi::lua_pushcfunction(l, entry);
                gate.entry = ffi::lua_ref(l, -1);
                ffi::lua_settop(l, 0);
            })?;
        }
        Ok(gate)
    }

    /// Runs `body` in a protected call on the state's main thread, the
    /// bundle alone on its stack. An error comes back as mlua would return
    /// it from `exec_raw`.
    ///
    /// # Safety
    ///
    /// Called from outside any Lua call of the state (as mlua's calls are
    /// made: the main thread's stack is mlua's, balanced between its
    /// calls), and `body` keeps to `raw`'s contract.
    pub(crate) unsafe fn call(&self, lua: &Lua, mut body: Body<'_>) -> mlua::Result<()> {
        let l = self.main;
        // SAFETY: the function's contract; four slots for the handler, the
        // entry, the pointer and the bundle, checked before they are
        // pushed; the stack is put back as found whatever the call did.
        unsafe {
            let top = ffi::lua_gettop(l);
            if ffi::lua_checkstack(l, 4) == 0 {
                return Err(mlua::Error::StackError);
            }
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, self.handler);
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, self.entry);
            ffi::lua_pushlightuserdata(l, (&mut body as *mut Body<'_>).cast::<c_void>());
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, self.bundle);
            let status = ffi::lua_pcall(l, 2, 0, top + 1);
            let out = if status == ffi::LUA_OK { Ok(()) } else { Err(self.error(lua, status)) };
            ffi::lua_settop(l, top);
            out
        }
    }

    /// The error on top of the main thread's stack after a failed call, as
    /// mlua's `pop_error` reads it: a failed allocation as a memory error,
    /// a message as a runtime error, and anything else (an error a Rust
    /// callback raised, or a panic in one) raised again inside mlua's own
    /// protected call, which unwraps it as it would have.
    unsafe fn error(&self, lua: &Lua, status: c_int) -> mlua::Error {
        let l = self.main;
        // SAFETY: the error value is on top of `l` (Luau leaves it there);
        // reading a string raises nothing; `lua_ref` copies it into the
        // registry, whence the closure below takes it and raises it.
        unsafe {
            if ffi::lua_type(l, -1) == ffi::LUA_TSTRING {
                let mut len = 0usize;
                let s = ffi::lua_tolstring(l, -1, &mut len);
                let text = String::from_utf8_lossy(std::slice::from_raw_parts(s.cast::<u8>(), len)).into_owned();
                return if status == ffi::LUA_ERRMEM { mlua::Error::MemoryError(text) } else { mlua::Error::RuntimeError(text) };
            }
            let r = ffi::lua_ref(l, -1);
            let again = lua.exec_raw::<()>((), |l| {
                ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, r);
                ffi::lua_unref(l, r);
                ffi::lua_error(l);
            });
            match again {
                Err(e) => e,
                Ok(()) => mlua::Error::RuntimeError("a Lua error that raised nothing".into()),
            }
        }
    }
}
