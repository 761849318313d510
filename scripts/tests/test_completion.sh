#!/usr/bin/env bash
# The completion scripts: the checked-in copies are what the command table generates; both parse
# (bash -n, zsh -n); sourcing the bash one registers `complete -F _tunnelctl tunnelctl`; the
# completion functions, driven with COMP_WORDS (bash) and words/CURRENT (zsh, with the completion
# builtins stubbed to print what they are given), offer the right commands, subcommands, options,
# peer names from a test configuration, tiers and fixed values; and a real interactive zsh
# (compinit, TAB through a pty: lib/zsh-complete.zsh) completes a few lines.
#   scripts/tests/test_completion.sh [BUILD_DIR]    (default .build/debug)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
BIN=$PWD/${1:-.build/debug}
CTL=$BIN/tunnelctl
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/tunneld.conf" <<'CONF'
[Interface]
PrivateKeyFile = /nonexistent/private.key
Address = 10.99.0.1/24
StateDirectory = /nonexistent/state
RuntimeDirectory = /nonexistent/run
[Peer]
Name = alice
PublicKey = v12sHZm+e6qsmw5BPmPgO0Jo6e5aHqdLBB1MNHDVSGs=
AllowedIPs = 10.99.0.2/32
[Peer]
Name = branch-office
PublicKey = 0iqNnJaswcf0K9K4sNnDaDXgtSf/L7HDJRTbqKNAtkU=
AllowedIPs = 10.99.0.3/32
CONF
touch "$tmp/conf-a.txt" "$tmp/conf-b.txt"

"$CTL" completion bash | cmp -s - completion/tunnelctl.bash && ok "completion/tunnelctl.bash = tunnelctl completion bash" \
  || bad "completion/tunnelctl.bash differs from 'tunnelctl completion bash' (run scripts/gen-docs.sh)"
"$CTL" completion zsh | cmp -s - completion/_tunnelctl && ok "completion/_tunnelctl = tunnelctl completion zsh" \
  || bad "completion/_tunnelctl differs from 'tunnelctl completion zsh' (run scripts/gen-docs.sh)"
bash -n completion/tunnelctl.bash && ok "bash -n" || bad "bash -n completion/tunnelctl.bash"
if command -v zsh >/dev/null; then zsh -n completion/_tunnelctl && ok "zsh -n" || bad "zsh -n completion/_tunnelctl"; else bad "zsh not installed (scripts/deps.sh)"; fi
reg=$(bash -c 'source completion/tunnelctl.bash && complete -p tunnelctl')
[ "$reg" = "complete -F _tunnelctl tunnelctl" ] && ok "sourced: $reg" || bad "complete -p tunnelctl: '$reg'"

# bash: words of the line (the last one is being completed) -> the offers, sorted, one line.
bcomp() {
  bash -c 'source completion/tunnelctl.bash; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tunnelctl
           printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$@" | sed 's/ $//'
}
# zsh: the same through stubs of compadd/_describe/_files/compset/compdef.
zcomp() {
  zsh -f -c '
    compdef() { : }
    compset() { : }
    _files() { [[ $1 == -/ ]] && print -r -- DIRS || print -r -- FILES }
    # Like the real ones, the stubs offer only the words that start with the word being completed.
    offer() { local w; for w in "$@"; do [[ $w == ${words[CURRENT]}* ]] && print -r -- $w; done; return 0 }
    _describe() { local -a a; a=("${(@P)4}"); offer "${a[@]%%:*}" }
    compadd() { if [[ $1 == -a ]]; then offer "${(@P)2}"; return; fi; while [[ $# -gt 0 && $1 != -- ]]; do shift; done; shift; offer "$@" }
    source completion/_tunnelctl
    words=("$@"); CURRENT=$#
    _tunnelctl | sort | tr "\n" " "' _ "$@" | sed 's/ $//'
}
expect() {
  local shell=$1 want=$2; shift 2
  local got
  if [ "$shell" = bash ]; then got=$(bcomp "$@"); else got=$(zcomp "$@"); fi
  [ "$got" = "$want" ] && ok "$shell: ${*/#$CTL/tunnelctl}<TAB> -> $want" || bad "$shell: ${*/#$CTL/tunnelctl}<TAB>: got '$got', want '$want'"
}
C=$tmp/tunneld.conf
for sh in bash zsh; do
  [ $sh = zsh ] && ! command -v zsh >/dev/null && continue
  expect $sh "peer peers" "$CTL" pe
  expect $sh "alice branch-office" "$CTL" session --config "$C" ""
  expect $sh "alice branch-office" "$CTL" --config "$C" kick ""
  expect $sh "alice branch-office" "$CTL" --config "$C" peer tier ""
  expect $sh "free premium" "$CTL" --config "$C" peer tier alice ""
  expect $sh "alice branch-office" "$CTL" flows --config "$C" --peer ""
  expect $sh "alice" "$CTL" explain --config "$C" a
  expect $sh "check reload show test" "$CTL" policy ""
  expect $sh "extract list off on" "$CTL" capture ""
  expect $sh "full metadata" "$CTL" capture on --detail ""
  expect $sh "peer peers policy prune" "$CTL" help p
  expect $sh "--config --help --json --policies" "$CTL" policy check --
  expect $sh "bash zsh" "$CTL" completion ""
  expect $sh "refusals=" "$CTL" retention set flows=7d re
  expect $sh "" "$CTL" audit mark ""
  expect $sh "" "$CTL" nosuchcommand ""
  expect $sh "--config --count" "$CTL" watch --co
done
expect bash "check reload show test" "$CTL" help policy ""
expect bash "$tmp/conf-a.txt $tmp/conf-b.txt" "$CTL" status --config "$tmp/conf-"
expect zsh "FILES" "$CTL" status --config ""
expect zsh "DIRS" "$CTL" policy check --policies ""
# Through bash's own word splitting at '=': --config=PATH completes files after the '='.
got=$(cd "$tmp" && bash -c 'source "'"$REPO"'/completion/tunnelctl.bash"; COMP_WORDS=(tunnelctl status --config = conf-); COMP_CWORD=4; _tunnelctl; printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "')
[ "$got" = "conf-a.txt conf-b.txt " ] && ok "bash: --config=conf-<TAB> -> files" || bad "bash: --config=conf-<TAB>: '$got'"
got=$(cd "$tmp" && bash -c 'source "'"$REPO"'/completion/tunnelctl.bash"; COMP_WORDS=(tunnelctl status --config =); COMP_CWORD=3; _tunnelctl; printf "%s " "${COMPREPLY[@]}"')
case $got in *"=conf-a.txt"*) ok "bash: --config=<TAB> keeps the '='" ;; *) bad "bash: --config=<TAB>: '$got'" ;; esac

mkdir "$tmp/sp"; touch "$tmp/sp/a file.conf"
got=$(bash -c 'source "'"$REPO"'/completion/tunnelctl.bash"; COMP_WORDS=(tunnelctl status --config "$1"); COMP_CWORD=3; _tunnelctl; echo "${#COMPREPLY[@]}:${COMPREPLY[0]}"' _ "$tmp/sp/a")
[ "$got" = "1:$tmp/sp/a file.conf" ] && ok "bash: a file name with a space is one offer" || bad "bash: file name with a space: '$got'"

# zsh for real: compinit, the script as installed, TAB typed through a pty.
if command -v zsh >/dev/null; then
  real() {
    if timeout 40 zsh -f scripts/tests/lib/zsh-complete.zsh "$REPO" "$CTL" "$1" "$2" >"$tmp/zpty.out" 2>&1; then ok "zsh (compinit, pty): $1<TAB> shows '$2'"
    else bad "zsh (compinit, pty): $1<TAB> did not show '$2': $(tail -c 300 "$tmp/zpty.out")"; fi
  }
  real "tunnelctl pol" "policy"
  real "tunnelctl policy " "verdict and rule for a hypothetical flow"
  real "tunnelctl session --config $C " "branch-office"
  real "tunnelctl capture on --detail=" "metadata"
fi

[ $fails -eq 0 ] && echo "completion: all passed" || { echo "completion: $fails failed"; exit 1; }
