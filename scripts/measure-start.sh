#!/bin/sh
# measure-start.sh BINARY [RUNS]: wall-clock time of `BINARY --help`,
# RUNS times (default 50), printed as min, median and 90th percentile in
# ms, with the binary's size. The page cache is warmed by one run first.
set -eu
bin=$1
runs=${2:-50}
"$bin" --help >/dev/null
i=0
while [ "$i" -lt "$runs" ]; do
	s=$(date +%s%N)
	"$bin" --help >/dev/null
	e=$(date +%s%N)
	echo $(((e - s) / 1000))
	i=$((i + 1))
done | sort -n | awk -v bin="$bin" -v size="$(stat -c %s "$bin")" '
	{ t[NR] = $1 }
	END { printf "%s: %.1f MB, --help min %.1f ms, median %.1f ms, p90 %.1f ms (%d runs)\n",
		bin, size / 1e6, t[1] / 1000, t[int((NR + 1) / 2)] / 1000, t[int(NR * 0.9)] / 1000, NR }'
