# Completes a line in a real interactive zsh (compinit + completion/_tunnelctl) through a pty and
# prints what it showed, escape sequences removed. Used by scripts/tests/test_completion.sh.
#   zsh -f scripts/tests/lib/zsh-complete.zsh REPO TUNNELCTL 'LINE' EXPECTED-SUBSTRING
# Exit 0 as soon as the output holds EXPECTED-SUBSTRING, 1 after ~15 s without it.
zmodload zsh/zpty
repo=$1 ctl=$2 line=$3 want=$4
zpty z zsh -f -i
zpty -w z "PS1='> '; autoload -U compinit; compinit -u -D; source $repo/completion/_tunnelctl; tunnelctl() { $ctl \"\$@\" }; print READY"
all="" chunk="" sent=0
for i in {1..60}; do
  while zpty -r -t z chunk; do all+=$chunk; done
  if (( ! sent )) && [[ $all == *READY*'> '* ]]; then zpty -w -n z "$line"$'\t'; sent=1; all=""; fi
  clean=${all//$'\r'/}
  if (( sent )) && [[ $clean == *$want* ]]; then zpty -d z; print -r -- "$clean"; exit 0; fi
  sleep 0.25
done
zpty -d z
print -r -- "${all//$'\r'/}"
exit 1
