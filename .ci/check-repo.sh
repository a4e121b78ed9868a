#!/usr/bin/env bash
# Repository checks CI runs (go tool task check):
#   1. no development-history narrative ("session 9", "tried and not kept", ...)
#      in tracked *.md and *.go files: documentation and comments describe
#      what the code does now, not how it came to be;
#   2. every relative link in tracked *.md files points at an existing file or
#      directory;
#   3. go.mod and go.sum are tidy (root module, cmd/kaas/testdata/confluentgo and
#      the modules under deploy/testenv).
# Prints every problem found and exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=0

# tracked FILE... lists the files git tracks (or would: new files not
# ignored) matching the pathspecs, minus the built test binaries, vendored
# code and generated protobuf code.
tracked() {
  git ls-files --cached --others --exclude-standard -- "$@" |
    grep -v -e '^deploy/testenv/bin/' -e '^vendor/' -e '/vendor/' -e '\.pb\.go$' | sort -u || true
}

# --- 1. development history ------------------------------------------------
# "session" only with a number after it ("session 9", "Sessions 3-5", not
# "session 45 s", a timeout) or this/earlier/previous/until/since before it,
# so Kafka's session timeouts, fetch sessions and session ids stay allowed.
history_re='\bsessions? [0-9]++(?:[.,][0-9]++)?+(?!\s*(ms|s|min|minutes|seconds|h|hours)\b)'
history_re+='|\b(this|earlier|previous|until|since) sessions?\b'
history_re+='|\bround [0-9]+ of work\b'
history_re+='|\btried and (not kept|reverted|dropped)\b'
history_re+='|\ban earlier version (measured|of the code)\b'

history_hits=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  while IFS= read -r hit; do
    echo "history narrative: $f:$hit"
    history_hits=$((history_hits + 1))
  done < <(grep -n -i -P -- "$history_re" "$f" || true)
done < <(tracked '*.md' '*.go' | tr '\n' '\0')
if [ "$history_hits" -gt 0 ]; then
  echo "check: $history_hits line(s) of development history in *.md/*.go; describe the current behaviour instead (measurements belong in docs/performance.md)"
  failed=1
fi

# --- 2. relative links in markdown -------------------------------------------
broken=0
while IFS= read -r -d '' md; do
  [ -f "$md" ] || continue
  dir=$(dirname "$md")
  # Links outside fenced code blocks: [text](target) or [text](target "title").
  while IFS=: read -r line target; do
    target=${target#<}
    target=${target%>}
    case "$target" in
      http://* | https://* | mailto:* | '#'* | '') continue ;;
    esac
    if [[ "$target" =~ ^[a-zA-Z][a-zA-Z0-9+.-]*: ]]; then
      continue # another scheme (ftp:, tel:, ...)
    fi
    path=${target%%#*}
    path=${path%%\?*}
    path=${path//%20/ }
    if [[ "$path" == /* ]]; then
      resolved=".$path" # GitHub resolves /x from the repository root
    else
      resolved="$dir/$path"
    fi
    if [ ! -e "$resolved" ]; then
      echo "broken link: $md:$line: ($target) -> $resolved does not exist"
      broken=$((broken + 1))
    fi
  done < <(awk '/^[ \t]*(```|~~~)/ { fence = !fence; next } !fence { print NR ":" $0 }' "$md" |
    grep -o -P '^[0-9]+:|\]\(\s*\K<?[^)\s>]+>?(?=(\s+"[^"]*")?\s*\))' |
    awk '/^[0-9]+:$/ { n = substr($0, 1, length($0) - 1); next } { print n ":" $0 }')
done < <(tracked '*.md' | tr '\n' '\0')
if [ "$broken" -gt 0 ]; then
  echo "check: $broken broken relative link(s) in *.md"
  failed=1
fi

# --- 3. go mod tidy ------------------------------------------------------------
# tidy_check DIR runs go mod tidy in DIR on a copy-and-restore basis: the
# files are always put back as they were; a difference fails the check.
tidy_check() {
  local dir=$1 tmp
  tmp=$(mktemp -d)
  cp "$dir/go.mod" "$tmp/go.mod"
  [ -f "$dir/go.sum" ] && cp "$dir/go.sum" "$tmp/go.sum"
  local rc=0
  (cd "$dir" && go mod tidy) || rc=$?
  local changed=0
  if [ "$rc" -ne 0 ]; then
    echo "go mod tidy failed in $dir"
    changed=1
  else
    for f in go.mod go.sum; do
      if [ -f "$tmp/$f" ] || [ -f "$dir/$f" ]; then
        if ! diff -u --label "$dir/$f (committed)" --label "$dir/$f (tidy)" \
          "$tmp/$f" "$dir/$f" 2>/dev/null; then
          changed=1
        fi
      fi
    done
  fi
  cp "$tmp/go.mod" "$dir/go.mod"
  if [ -f "$tmp/go.sum" ]; then
    cp "$tmp/go.sum" "$dir/go.sum"
  else
    rm -f "$dir/go.sum"
  fi
  rm -rf "$tmp"
  if [ "$changed" -ne 0 ]; then
    echo "check: $dir/go.mod or go.sum is not tidy; run go mod tidy there"
    failed=1
  fi
}

for mod in . cmd/kaas/testdata/confluentgo deploy/testenv deploy/testenv/jaeger deploy/testenv/toxiproxy deploy/testenv/containerd deploy/testenv/coredns; do
  if [ -f "$mod/go.mod" ]; then
    tidy_check "$mod"
  fi
done

if [ "$failed" -ne 0 ]; then
  exit 1
fi
echo "check: ok"
