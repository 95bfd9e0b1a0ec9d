#!/usr/bin/env bash
# The issue-6 benchmark set in one go, for a quiet machine (the shared 2-core machine is too
# noisy while others compile). Needs build/bin (xinfer, kernel_bench) and
# build/tok (tokenizer files of any Qwen2 model). Pins to 2 cores to match the target.
set -u
BIN=build/bin
if ldd $BIN/xinfer | grep -q "not found"; then export LD_LIBRARY_PATH=build/libs; fi
lscpu | grep -E "Model name|^CPU\(s\)|L3" ; grep -o -E "avx512(f|_bf16|bw)" /proc/cpuinfo | sort -u | tr '\n' ' '; echo
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
PIN="taskset -c 0,1"
M=/tmp/q05-bf16; F=/tmp/q05-f32
$BIN/xinfer make-model --preset qwen2.5-0.5b --out $M --dtype bf16 | tail -1
cp build/tok/* $M/
$PIN $BIN/xinfer doctor --measure --model $M --threads 2 | tee $OUT/doctor.txt
run() { local name=$1; shift; $PIN $BIN/xinfer bench offline --threads 2 --json "$@" 2>/dev/null > $OUT/$name.json; \
  python3 -c "import json,sys;j=json.load(open('$OUT/$name.json'));print('$name',{k:round(j[k],3) if isinstance(j[k],float) else j[k] for k in ['prefill_tok_s','decode_tok_s','decode_tok_s_per_seq','read_gb_s','peak_f32_gflop_s','decode_roofline_tok_s','decode_roofline_fraction','prefill_roofline_fraction','prefill_tok_s_runs','decode_tok_s_runs']})"; }
run decode1 --model $M --input-len 128 --output-len 64 --batch 1 --runs 5
run prefill512 --model $M --input-len 512 --output-len 2 --batch 1 --runs 3
run batch16 --model $M --input-len 128 --output-len 128 --batch 16 --runs 3
run batch64 --model $M --input-len 128 --output-len 64 --batch 64 --runs 1
run prefill512_bf16 --model $M --input-len 512 --output-len 2 --batch 1 --runs 3 --dtype bfloat16
run batch16_bf16 --model $M --input-len 128 --output-len 128 --batch 16 --runs 1 --dtype bfloat16
run batch64_bf16 --model $M --input-len 128 --output-len 64 --batch 64 --runs 1 --dtype bfloat16
rm -rf $M
$BIN/xinfer make-model --preset qwen2.5-0.5b --out $F --dtype f32 | tail -1
cp build/tok/* $F/
run decode1_f32 --model $F --input-len 128 --output-len 64 --batch 1 --runs 3
$PIN $BIN/kernel_bench --benchmark_filter='BM_Linear/T:(1|16|512)/N:(4864|896)/K:(896|4864)/dtype:1/path:(0|2)|BM_PagedAttention' --benchmark_min_time=0.2 2>/dev/null | grep BM_
