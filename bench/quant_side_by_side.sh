#!/usr/bin/env bash
# Issue-7 speed figures: AWQ g128 and GGUF Q4_0 of the Qwen2.5-0.5B shape, xinfer against
# llama.cpp on the very same GGUF files, in one run (the machines are noisy: compare within a run).
#
#   LLAMA_CPP=/path/to/llama.cpp/build/bin bench/quant_side_by_side.sh
#
# LLAMA_CPP points at a llama.cpp release build made beside the project (never inside it), with
# llama-bench, llama-batched-bench and llama-quantize; nothing here builds it.
# Needs build/bin/xinfer and a folder with a Qwen tokenizer (TOK, default ../shared/models/tiny-qwen3).
set -eu
BIN=${BIN:-build/bin}
LLAMA_CPP=${LLAMA_CPP:?set LLAMA_CPP to llama.cpp build/bin}
TOK=${TOK:-../shared/models/tiny-qwen3}
W=${WORK:-/tmp/xinfer-quant-bench}
THREADS=${THREADS:-2}
RUNS=${RUNS:-3}
mkdir -p "$W"
[ -d "$W/q05" ] || "$BIN/xinfer" make-model --preset qwen2.5-0.5b --out "$W/q05" --tokenizer "$TOK" | tail -1
[ -d "$W/q05-awq" ] || "$BIN/xinfer" quantize --awq --group-size 128 "$W/q05" "$W/q05-awq"
[ -f "$W/q05-bf16.gguf" ] || "$BIN/xinfer" quantize --gguf bf16 "$W/q05" "$W/q05-bf16.gguf"
[ -f "$W/q05-q4_0-pure.gguf" ] || "$BIN/xinfer" quantize --gguf q4_0 "$W/q05" "$W/q05-q4_0-pure.gguf"
# llama-quantize's default Q4_0 mix: Q4_0 layers; the tied token_embd would be Q6_K but 896 is not
# a multiple of 256, so it falls back to Q8_0 (this is the file the anchors' Q4_0 row used).
[ -f "$W/q05-q4_0.gguf" ] || "$LLAMA_CPP/llama-quantize" "$W/q05-bf16.gguf" "$W/q05-q4_0.gguf" q4_0 >/dev/null 2>&1

xi() {  # name, bench offline args...
  local name=$1; shift
  echo "== xinfer $name"
  "$BIN/xinfer" bench offline --threads "$THREADS" "$@" 2>/dev/null | grep -E "^model|^measured|^prefill|^decode"
}
ll() {  # model
  echo "== llama.cpp tg128 $(basename "$1")"
  "$LLAMA_CPP/llama-bench" -m "$1" -p 0 -n 128 -t "$THREADS" -r "$RUNS" 2>/dev/null | grep -E "tg128"
}
llb() {  # model, parallel sequences
  echo "== llama.cpp batched $(basename "$1") npl=$2"
  "$LLAMA_CPP/llama-batched-bench" -m "$1" -c 8192 -b 2048 -ub 512 -npp 128 -ntg 128 -npl "$2" \
    -t "$THREADS" 2>/dev/null | grep -E "^\|\s+128"
}

# llama-quantize's K-quant mixes of the same model (for the 0.5B shape mostly Q5_0 / Q5_1 with
# Q4_K / Q5_K / Q6_K ffn_down and a Q8_0 token_embd: 896 columns are no multiple of 256).
for q in q4_k_m q5_k_m; do
  [ -f "$W/q05-$q.gguf" ] || "$LLAMA_CPP/llama-quantize" "$W/q05-bf16.gguf" "$W/q05-$q.gguf" $q >/dev/null 2>&1
done

# Each xinfer figure twice: F32 activations (--no-int8-activations), then --int8-activations (x
# quantized to int8 per block of 32: llama.cpp's arithmetic and xinfer's default for GGUF files,
# vLLM's CPU one for AWQ).
I8=--int8-activations
F32=--no-int8-activations
for m in q4_0 q4_0-pure q4_k_m q5_k_m; do
  ll "$W/q05-$m.gguf"
  for f in $F32 $I8; do
    xi "$m decode 1 $f" --model "$W/q05-$m.gguf" --input-len 16 --output-len 128 --batch 1 \
      --runs "$RUNS" $f
  done
  ll "$W/q05-$m.gguf"
done
for f in $F32 $I8; do
  xi "awq decode 1 $f" --model "$W/q05-awq" --input-len 16 --output-len 128 --batch 1 --runs "$RUNS" $f
  xi "awq decode 16 $f" --model "$W/q05-awq" --input-len 128 --output-len 128 --batch 16 --runs 1 $f
  xi "q4_0 decode 16 $f" --model "$W/q05-q4_0.gguf" --input-len 128 --output-len 128 --batch 16 \
    --runs 1 $f
done
llb "$W/q05-q4_0.gguf" 16
