#!/usr/bin/env bash
# Byte-identity of every compile stage between two `tessera` binaries: dumps every stage
# (`tessera compile --dump-dir`) of every ir/examples/*.tir and conformance/kernels/*.tir for
# every target (cpu, vulkan, cuda at sm_80 and sm_90, rocm at gfx90a and gfx1100) with both,
# and diffs the folders. A change that must not alter code (a refactoring) passes only when
# every file of every stage is the same, and both binaries succeed or fail alike.
#
# usage: scripts/check_stage_identity.sh OLD_TESSERA NEW_TESSERA [WORK_DIR]
# The old binary may predate the canonical target names: it is given the old ones (cpu,
# spirv-vulkan, ptx, hsaco), the new binary the canonical ones (cpu, vulkan, cuda, rocm).
# Exit 0 when identical; 1 with the differing files listed otherwise.
set -u
old=${1:?usage: $0 OLD_TESSERA NEW_TESSERA [WORK_DIR]}
new=${2:?usage: $0 OLD_TESSERA NEW_TESSERA [WORK_DIR]}
work=${3:-$(mktemp -d)}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"

# old-name new-name arch
targets=(
  "cpu cpu -"
  "spirv-vulkan vulkan -"
  "ptx cuda sm_80"
  "ptx cuda sm_90"
  "hsaco rocm gfx90a"
  "hsaco rocm gfx1100"
)
files=0 stages=0 differ=0 outcome=0
for tir in "$root"/ir/examples/*.tir "$root"/conformance/kernels/*.tir; do
  base=$(basename "$(dirname "$tir")")-$(basename "$tir" .tir)
  for t in "${targets[@]}"; do
    read -r oldname newname arch <<<"$t"
    archargs=()
    [[ $arch != - ]] && archargs=(--arch "$arch")
    dir=$work/$base/$newname-$arch
    rm -rf "$dir"
    mkdir -p "$dir"
    "$old" compile "$tir" --target "$oldname" "${archargs[@]}" --dump-dir "$dir/old" \
      >/dev/null 2>"$dir/old.err"
    orc=$?
    "$new" compile "$tir" --target "$newname" "${archargs[@]}" --dump-dir "$dir/new" \
      >/dev/null 2>"$dir/new.err"
    nrc=$?
    files=$((files + 1))
    if [[ $orc != "$nrc" ]]; then
      echo "DIFFERENT OUTCOME: $tir --target $newname $arch: old rc $orc, new rc $nrc"
      outcome=$((outcome + 1))
      continue
    fi
    [[ $orc != 0 ]] && continue # both refuse it (e.g. CUDA's 48 KiB of shared memory)
    for f in "$dir"/old/*; do
      stages=$((stages + 1))
      name=$(basename "$f")
      if ! cmp -s "$f" "$dir/new/$name"; then
        echo "DIFFERENT: $tir --target $newname $arch: $name"
        differ=$((differ + 1))
      fi
    done
    for f in "$dir"/new/*; do
      [[ -e $dir/old/$(basename "$f") ]] && continue
      echo "ONLY NEW: $tir --target $newname $arch: $(basename "$f")"
      differ=$((differ + 1))
    done
  done
done
echo "$files compiles, $stages stage files compared: $differ differ, $outcome outcomes differ (work dir $work)"
[[ $differ == 0 && $outcome == 0 ]]
