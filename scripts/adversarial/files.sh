# Issue 36: files written on a user's behalf and job output read back.
# Sourced by scripts/adversarial.sh (check, skip, rc, wl, has, $C, $W, $root).
#
# Under sudo (SUDO_UID/SUDO_GID of a user made here), every path the user
# names is opened as that user: a root-only file named as a job's output,
# --trace, --out or a --report file is refused and left byte for byte, a
# file in a root-only directory is not created, a link is never written
# through. Job output that is a device, a FIFO or one 300 MB line finishes
# promptly, is never read back whole, and is shown cut and escaped.

echo "== files written for a user (issue 36)"
fw="$W/files"
mkdir -p "$fw"
# The size of a file, its mode, owner and content digest, in one word.
fsnap() { stat -c '%s-%a-%u' "$1" | tr -d '\n'; printf -- '-'; sha1sum <"$1" | cut -c1-12; }
if [ $root = 1 ] && command -v useradd >/dev/null; then
    fu=cosched-adv-$$
    useradd --system --no-create-home --shell /usr/sbin/nologin "$fu" 2>/dev/null
    fuid=$(id -u "$fu"); fgid=$(id -g "$fu")
    chmod 777 "$fw"
    printf 'root:secret\n' >"$fw/shadow"; chmod 600 "$fw/shadow"
    mkdir -p "$fw/locked"; chmod 755 "$fw/locked"
    before=$(fsnap "$fw/shadow")
    as_user() { SUDO_UID=$fuid SUDO_GID=$fgid SUDO_USER=$fu "$@"; }
    got=$(rc as_user $C simulate --scenario examples/scenarios/seed000.toml --orders 1 --trace "$fw/shadow")
    check "sudo simulate --trace ROOT-ONLY-FILE: refused" 1 "$got"
    check "  says permission denied" yes "$(has 'Permission denied')"
    check "  root file unchanged" "$before" "$(fsnap "$fw/shadow")"
    $C run --workload "$ok" --policy exclusive --solo stored --db "$fw/c.db" >/dev/null 2>&1
    check "sudo db export --out ROOT-ONLY-FILE: refused" 2 "$(rc as_user $C db export --format json --db "$fw/c.db" --out "$fw/shadow")"
    check "  root file unchanged" "$before" "$(fsnap "$fw/shadow")"
    ln -sf "$fw/shadow" "$fw/link.json"
    check "sudo db export --out LINK-TO-ROOT-FILE: link replaced" 0 "$(rc as_user $C db export --format json --db "$fw/c.db" --out "$fw/link.json")"
    check "  root file unchanged" "$before" "$(fsnap "$fw/shadow")"
    check "  the new file is the user's" "$fuid" "$(stat -c %u "$fw/link.json")"
    rc as_user $C simulate --scenario examples/scenarios/seed000.toml --orders 1 --trace "$fw/locked/t.csv" >/dev/null
    check "sudo --trace into a root-only directory: not created" no "$([ -e "$fw/locked/t.csv" ] && echo yes || echo no)"
    check "sudo --trace where the user may write: the user's" "$fuid" \
        "$(as_user $C simulate --scenario examples/scenarios/seed000.toml --orders 1 --trace "$fw/t.csv" >/dev/null 2>&1; stat -c %u "$fw/t.csv")"
    outw=$(wl fout "[[pools]]
name = \"host\"
cores = 1
[[jobs]]
name = \"a\"
command = \"echo taken\"
output = \"$fw/shadow\"")
    dbefore=$(fsnap "$fw/c.db")
    check "sudo run --db ROOT'S DATABASE: refused" 2 "$(rc as_user $C run --workload "$ok" --policy exclusive --solo stored --db "$fw/c.db")"
    check "  says the database is opened as the user" yes "$(has 'opened as the invoking user')"
    check "  root's database unchanged" "$dbefore" "$(fsnap "$fw/c.db")"
    # From here the runs keep their records in a database of the user's.
    check "sudo run, job output = ROOT-ONLY-FILE: job not ok" 1 "$(rc as_user $C run --workload "$outw" --policy exclusive --solo stored --db "$fw/u.db")"
    check "  the user's database is theirs" "$fuid" "$(stat -c %u "$fw/u.db")"
    check "  says permission denied" yes "$(has 'Permission denied')"
    check "  root file unchanged" "$before" "$(fsnap "$fw/shadow")"
    mkdir -p "$fw/rep"; chmod 777 "$fw/rep"
    printf 'root page\n' >"$fw/rep/index.html"; chmod 600 "$fw/rep/index.html"
    ibefore=$(fsnap "$fw/rep/index.html")
    check "sudo run --report, index.html root-only: refused" 1 "$(rc as_user $C run --workload "$ok" --policy exclusive --solo stored --db "$fw/u.db" --report "$fw/rep")"
    check "  index.html unchanged" "$ibefore" "$(fsnap "$fw/rep/index.html")"
    userdel "$fu" 2>/dev/null
else
    skip "files under sudo" "needs root and useradd"
fi

mkfifo "$fw/fifo"
devw=$(wl fdev "[[pools]]
name = \"host\"
cores = 1
[[jobs]]
name = \"zero\"
command = \"echo hi\"
output = \"/dev/zero\"
[[jobs]]
name = \"full\"
command = \"sh -c 'echo hi; exit 0'\"
output = \"/dev/full\"
[[jobs]]
name = \"tty\"
command = \"echo hi\"
output = \"/dev/tty\"
[[jobs]]
name = \"fifo\"
command = \"echo hi\"
output = \"$fw/fifo\"")
# setsid: no controlling terminal; ulimit -v: a runner that read /dev/zero
# back would be stopped by its memory, not the machine's.
got=$(rc setsid -w sh -c "ulimit -v 2000000; exec timeout 60 $C run --workload $devw --policy exclusive --solo stored")
check "run, outputs /dev/zero /dev/full /dev/tty FIFO: ends, tty+fifo not ok" 1 "$got"
check "  2 jobs not ok (tty without a terminal, FIFO)" yes "$(has '2 job(s) did not end ok')"
check "  the FIFO is still a FIFO" yes "$([ -p "$fw/fifo" ] && echo yes || echo no)"

longw=$(wl flong '[[pools]]
name = "host"
cores = 1
[[jobs]]
name = "long"
command = ["sh", "-c", "head -c 300000000 /dev/zero | tr \"\\\\0\" x; printf \"\\\\n\\\\033]0;owned\\\\007\"; exit 3"]')
got=$(rc sh -c "ulimit -v 2000000; exec $C run --workload $longw --policy exclusive --solo stored")
check "run, a 300 MB output line then an escape: job failed" 1 "$got"
check "  stderr stays small" yes "$([ "$(wc -c <"$W/err")" -lt 4000 ] && echo yes || echo no)"
check "  the escape is shown, not sent" yes "$(grep -q 'failed (exit code 3): \\e\]0;owned\\x07' "$W/err" && ! grep -q "$(printf '\033')" "$W/err" && echo yes || echo no)"
