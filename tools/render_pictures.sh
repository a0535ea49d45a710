#!/bin/sh
# Regenerates the pictures in docs/pictures/ (SVG as headprune writes them, PNG rendered with
# librsvg's rsvg-convert: `apt-get install librsvg2-bin fonts-dejavu-core`), from the repository
# root after a build:
#   heads.{svg,png}  the README main job's result: run the README's prune command first
#                    (out/minilm-50)
#   sweep.{svg,png}  the sweep of docs/results.md, from its committed sweep.json
#                    (docs/pictures/minilm-sweep/sweep.json)
set -eu
command -v rsvg-convert >/dev/null || { echo "render_pictures: needs rsvg-convert (apt-get install librsvg2-bin fonts-dejavu-core)" >&2; exit 1; }
[ -d out/minilm-50 ] || { echo "render_pictures: out/minilm-50 is missing; run the README's main prune command first" >&2; exit 1; }
build/headprune report out/minilm-50 --svg docs/pictures/heads.svg >/dev/null
build/headprune report docs/pictures/minilm-sweep --svg docs/pictures/sweep.svg >/dev/null
for picture in heads sweep; do
  rsvg-convert -o "docs/pictures/$picture.png" "docs/pictures/$picture.svg"
done
echo "written: docs/pictures/heads.{svg,png} docs/pictures/sweep.{svg,png}"
