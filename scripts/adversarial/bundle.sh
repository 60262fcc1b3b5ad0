# Issue 39, bundles: what one store knows, imported into another; a bundle
# that is not whole, not ours or not a file is refused and changes nothing.
echo "== bundle: export, import twice, refused bundles leave the store as it was"

bsrc="$W/bundle-src.db"
rc $C calibrate --kernel compute --repeats 1 --db "$bsrc" >/dev/null
check "db export --bundle: written" 0 "$(rc $C db export --bundle "$W/b.bundle" --db "$bsrc")"
check "db import into a new store" 0 "$(rc $C db import "$W/b.bundle" --db "$W/bundle-dst.db")"
check "  a second import adds nothing" yes "$($C db import "$W/b.bundle" --db "$W/bundle-dst.db" | grep -q '^0 rows added' && echo yes || echo no)"
sum() { sha256sum "$W/bundle-dst.db" | cut -d' ' -f1; }
before=$(sum)
head -c 200 "$W/b.bundle" >"$W/cut.bundle"
check "a cut bundle: refused" 2 "$(rc $C db import "$W/cut.bundle" --db "$W/bundle-dst.db")"
check "  says it is not whole" yes "$(has 'not a whole gzip file')"
printf 'not a bundle' | gzip >"$W/plain.bundle"
check "gzip of something else: refused" 2 "$(rc $C db import "$W/plain.bundle" --db "$W/bundle-dst.db")"
check "/dev/zero as a bundle: refused" 2 "$(rc $C db import /dev/zero --db "$W/bundle-dst.db")"
check "  says it is not a regular file" yes "$(has 'not a regular file')"
check "the store is unchanged by the refused bundles" "$before" "$(sum)"
check "--bundle with --format: refused" 2 "$(rc $C db export --bundle "$W/x.bundle" --format json --db "$bsrc")"
