//! How an error ends the process: its message on stderr and an exit code
//! (0 ok, 1 the work failed, 2 bad usage or input, 128 + signal).

/// Prints the error as `cosched: ...`; a verb stopped by a signal says what
/// it left behind on a line of its own first.
pub fn report(e: &anyhow::Error) -> i32 {
    match e.downcast_ref::<cosched_app::Notice>() {
        Some(notice) => {
            eprintln!("cosched: {notice}");
            let rest: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
            eprintln!("cosched: {}", rest.join(": "));
        }
        None => eprintln!("cosched: {e:#}"),
    }
    cosched_app::exit_code(e)
}
