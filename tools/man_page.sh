#!/usr/bin/env bash
# Writes gpt's man page (roff) from its own help texts, so the page cannot drift from the flags:
# help2man makes the page from `gpt --help` and `gpt --version`, and each subcommand's --help
# becomes a subsection of SUBCOMMANDS with its options as tagged paragraphs. The build runs it
# (the man_page target) when help2man is installed.
#   tools/man_page.sh GPT_BINARY OUTPUT
set -euo pipefail
binary=$(realpath "$1")
out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# gpt under its own name (the help texts print argv[0] in their usage lines).
printf '#!/usr/bin/env bash\nexec -a gpt %q "$@"\n' "$binary" >"$work/gpt"
chmod +x "$work/gpt"

# One subcommand's --help as roff. CLI11 lays an option out as its names and type in a column of
# 28 characters after the indent, then the description (on the next lines when the names are
# wider); "[Option Group: NAME]" and the line under it open a group of options.
help_to_roff() {
  awk '
    function escape(s) { gsub(/\\/, "\\e", s); return s }
    function text(s) { s = escape(s); return s ~ /^[.'\'']/ ? "\\&" s : s }
    function names(s,   rest) {  # the option names bold, with roff minus signs; the type as it is
      rest = ""
      if (match(s, / /)) { rest = substr(s, RSTART); s = substr(s, 1, RSTART - 1) }
      s = escape(s)
      gsub(/-/, "\\-", s)
      return "\\fB" s "\\fR" escape(rest)
    }
    function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
    NR == 1 { summary = $0; next }
    /^Usage: / { sub(/^Usage: /, ""); print ".SS \"" escape($0) "\""; print text(summary); next }
    /^ *(Options|Positionals):$/ || /^ *$/ { next }
    /^\[Option Group: / {
      group = $0; sub(/^\[Option Group: /, "", group); sub(/\]$/, "", group)
      print ".PP"; print "\\fI" escape(group) "\\fR:"
      next
    }
    /^ *-/ {
      match($0, /^ */); indent = RLENGTH
      option = substr($0, indent + 1)
      description = ""
      if (length(option) <= 28 || substr(option, 28, 1) == " ") {  # else the description is below
        description = trim(substr(option, 29))
        option = substr(option, 1, 28)
      }
      print ".TP"; print names(trim(option))
      if (description != "") print text(description)
      next
    }
    { print text(trim($0)) }  # a group description, or the rest of a wide option
  '
}

{
  echo "[SUBCOMMANDS]"
  echo "Each subcommand has options of its own; \\fBgpt\\fR \\fISUBCOMMAND\\fR \\fB\\-\\-help\\fR prints them."
  "$work/gpt" --help | awk '/^Subcommands:/ { listing = 1; next } listing && /^  [a-z]/ { print $1 }' |
    while read -r subcommand; do
      "$work/gpt" "$subcommand" --help | help_to_roff
    done
} >"$work/include"

# The version without the kernels it names, which are the build machine's, not the reader's.
version=$("$work/gpt" --version | sed 's/ (kernels: .*//')
help2man --no-info --name "train and sample character-level GPT models" --section 1 \
  --version-string "$version" --include "$work/include" --output "$out" "$work/gpt"
