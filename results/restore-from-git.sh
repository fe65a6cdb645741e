# Sourced by the run scripts under results/ (continue-shipped.sh, selfplay-12h/run.sh):
#
#   . results/restore-from-git.sh
#   restore_from_git REV:PATH DEST
#
# Files that once were in results/ and left it (checkpoints, league snapshots) are restored
# from git history: the blob REV:PATH is written to DEST unless DEST is there already (it is
# never overwritten), through DEST.part so that an interruption leaves no half-written file.
# Where the blob is missing (a shallow clone), it stops the script with a one-line error.
restore_from_git() {
  local blob=$1 dest=$2
  [ -f "$dest" ] && return 0
  mkdir -p "$(dirname "$dest")"
  if ! git show "$blob" > "$dest.part"; then
    rm -f "$dest.part"
    echo "$(basename "$0"): cannot restore $dest from git history ($blob);" \
      "run it in a full clone of the repository (not a shallow one)" >&2
    exit 1
  fi
  mv "$dest.part" "$dest"
}
