#!/usr/bin/env bash
# End-to-end checks of `kiln serve` on the bundled model, over loopback with curl: the
# routes, the API key, a greedy completion equal to `kiln generate`'s, a chat stream ending
# in usage and [DONE], the error codes (400, 401, 404, 429, 400 for a prompt longer than the
# context), a client hanging up mid-stream or before a whole reply (its request aborted),
# and SIGTERM draining a stream to its end and exiting 0. Skips when the model was not
# fetched (fails under CI).
#   $1 kiln
set -euo pipefail
kiln=$1
dir=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  [ -f "$dir/server.err" ] && { echo "--- server stderr:"; tail -n 20 "$dir/server.err"; }
  exit 1
}
model=${KILN_MODEL_DIR:-$HOME/.cache/kiln/models}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  [ "${CI:-}" = true ] && fail "the bundled model is missing: $model"
  echo "SKIP: the bundled model is not fetched (scripts/fetch_model.sh)"
  exit 0
fi
command -v curl >/dev/null || fail "curl is not installed (scripts/setup.sh installs it)"

key=test-key
# A small queue so that a burst overflows it (429).
"$kiln" serve --port 0 --api-key "$key" --max-running 2 --max-queued 2 >"$dir/server.out" 2>"$dir/server.err" &
server_pid=$!
for _ in $(seq 600); do
  grep -q "listening on" "$dir/server.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || fail "kiln serve exited before listening"
  sleep 0.5
done
line=$(cat "$dir/server.out")
[[ $line =~ listening\ on\ (http://[0-9.]+:[0-9]+)\ \(model\ \'(.*)\',\ ([0-9]+)-token\ context\) ]] ||
  fail "no listening line: $line"
url=${BASH_REMATCH[1]}
name=${BASH_REMATCH[2]}
context=${BASH_REMATCH[3]}
auth=(-H "Authorization: Bearer $key")
json=(-H "Content-Type: application/json")

# status BODY_FILE ARGS...: the HTTP status of a request, its body saved.
status() {
  local out=$1; shift
  curl -s -o "$out" -w '%{http_code}' "$@"
}

# Routes.
[ "$(status "$dir/health" "$url/health")" = 200 ] || fail "/health"
grep -q '"ok"' "$dir/health" || fail "/health said $(cat "$dir/health")"
[ "$(status "$dir/models" "${auth[@]}" "$url/v1/models")" = 200 ] || fail "/v1/models"
grep -qF "\"id\":\"$name\"" "$dir/models" || fail "/v1/models: $(cat "$dir/models")"
[ "$(status "$dir/e" "$url/v1/models")" = 401 ] || fail "/v1/models without the key"
grep -q invalid_api_key "$dir/e" || fail "401 body: $(cat "$dir/e")"
[ "$(status "$dir/e" -H "Authorization: Bearer nope" "$url/v1/models")" = 401 ] || fail "a wrong key was accepted"

# A greedy completion equals kiln generate's (the engine against the plain runner).
prompt="The capital of France is"
[ "$(status "$dir/c" "${auth[@]}" "${json[@]}" "$url/v1/completions" \
  -d "{\"prompt\": \"$prompt\", \"max_tokens\": 8, \"temperature\": 0}")" = 200 ] || fail "completion: $(cat "$dir/c")"
text=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["choices"][0]["text"])' "$dir/c")
expected=$("$kiln" generate --prompt "$prompt" -n 8 --temperature 0 2>/dev/null)
[ "$text" = "$expected" ] || fail "served '$text', kiln generate '$expected'"
python3 - "$dir/c" <<'EOF' || fail "completion body: $(cat "$dir/c")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["object"] == "text_completion" and r["id"].startswith("cmpl-"), r
assert r["usage"]["completion_tokens"] == 8 and r["usage"]["prompt_tokens"] > 0, r
assert r["choices"][0]["finish_reason"] == "length", r
EOF

# A chat stream: role first, text deltas, finish_reason, usage, [DONE].
curl -sN "${auth[@]}" "${json[@]}" "$url/v1/chat/completions" -d '{"messages": [{"role": "user",
  "content": "Say hello."}], "max_tokens": 12, "stream": true, "stream_options": {"include_usage": true}}' \
  >"$dir/stream" || fail "chat stream"
python3 - "$dir/stream" <<'EOF' || fail "chat stream: $(cat "$dir/stream")"
import json, sys
events = [e for e in open(sys.argv[1]).read().split("\n\n") if e and not e.startswith(":")]
assert all(e.startswith("data: ") for e in events), events
assert events[-1] == "data: [DONE]", events[-1]
chunks = [json.loads(e[6:]) for e in events[:-1]]
assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
assert text.strip(), "no text"
assert any(c["choices"] and c["choices"][0]["finish_reason"] in ("stop", "length") for c in chunks)
assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0, chunks[-1]
EOF

# Errors.
expect() {  # STATUS WHAT CURL_ARGS...
  local want=$1 what=$2; shift 2
  local got
  got=$(status "$dir/e" "$@")
  [ "$got" = "$want" ] || fail "$what: HTTP $got, wanted $want: $(cat "$dir/e")"
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["message"] and e["type"]' "$dir/e" ||
    fail "$what: not an OpenAI error body: $(cat "$dir/e")"
}
expect 400 "malformed JSON" "${auth[@]}" "${json[@]}" "$url/v1/completions" -d '{"prompt": '
expect 400 "bad parameter" "${auth[@]}" "${json[@]}" "$url/v1/completions" -d '{"prompt": "x", "top_p": 5}'
expect 404 "unknown model" "${auth[@]}" "${json[@]}" "$url/v1/chat/completions" \
  -d '{"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}'
expect 401 "no key" "${json[@]}" "$url/v1/completions" -d '{"prompt": "x"}'
long=$(python3 -c "import sys; print(','.join(['42'] * (int(sys.argv[1]) + 1)))" "$context")
expect 400 "prompt longer than the context" "${auth[@]}" "${json[@]}" "$url/v1/completions" -d "{\"prompt\": [$long]}"
grep -q "context" "$dir/e" || fail "the long-prompt error does not mention the context: $(cat "$dir/e")"
# max_tokens beyond the context after the prompt: refused at once, naming the most it may be.
expect 400 "max_tokens beyond the context" "${auth[@]}" "${json[@]}" "$url/v1/completions" \
  -d "{\"prompt\": [42], \"max_tokens\": $context}"
grep -q "context_length_exceeded" "$dir/e" && grep -q "at most $((context - 1))" "$dir/e" ||
  fail "the max_tokens error: $(cat "$dir/e")"
# A GET on a POST route: 405 with Allow.
[ "$(curl -s -o /dev/null -D "$dir/h" -w '%{http_code}' "${auth[@]}" "$url/v1/chat/completions")" = 405 ] ||
  fail "GET /v1/chat/completions is not 405"
grep -qi "^allow: POST" "$dir/h" || fail "no Allow header: $(cat "$dir/h")"

# A burst over --max-running 2 + --max-queued 2: some requests are refused with 429.
burst=()
for i in $(seq 8); do
  curl -s -o /dev/null -w '%{http_code}\n' "${auth[@]}" "${json[@]}" "$url/v1/completions" \
    -d "{\"prompt\": \"Count: $i\", \"max_tokens\": 48, \"ignore_eos\": true}" >"$dir/burst.$i" &
  burst+=($!)
done
wait "${burst[@]}" || true
codes=$(cat "$dir"/burst.* | sort | uniq -c | tr '\n' ' ')
grep -q 429 <<<"$codes" || fail "no 429 in a burst of 8: $codes"
grep -q 200 <<<"$codes" || fail "no 200 in a burst of 8: $codes"

# A client that hangs up mid-stream: its request is aborted, so nothing stays running.
curl -sN "${auth[@]}" "${json[@]}" "$url/v1/completions" \
  -d '{"prompt": "Once", "max_tokens": 4000, "ignore_eos": true, "stream": true}' >"$dir/hangup" &
curl_pid=$!
for _ in $(seq 100); do grep -q '"text"' "$dir/hangup" 2>/dev/null && break; sleep 0.1; done
kill "$curl_pid"
wait "$curl_pid" 2>/dev/null || true
running=1
for _ in $(seq 100); do
  running=$(curl -s "$url/metrics" | awk '$1 == "kiln_requests_running" {print $2}')
  [ "$running" = 0 ] && break
  sleep 0.1
done
[ "$running" = 0 ] || fail "a hung-up stream is still running ($running)"
# The same for a non-streaming request (nothing is written before its end: the server
# watches the connection instead).
running_now() { curl -s "$url/metrics" | awk '$1 == "kiln_requests_running" {print $2}'; }
curl -s "${auth[@]}" "${json[@]}" "$url/v1/completions" \
  -d '{"prompt": "Once", "max_tokens": 4000, "ignore_eos": true}' >"$dir/hangup_whole" &
curl_pid=$!
for _ in $(seq 100); do [ "$(running_now)" = 1 ] && break; sleep 0.1; done
[ "$(running_now)" = 1 ] || fail "the non-streaming request never ran"
kill "$curl_pid"
wait "$curl_pid" 2>/dev/null || true
for _ in $(seq 100); do [ "$(running_now)" = 0 ] && break; sleep 0.1; done
[ "$(running_now)" = 0 ] || fail "a hung-up non-streaming request is still running ($(running_now))"
curl -s "$url/metrics" >"$dir/metrics"
for metric in kiln_time_to_first_token_seconds_bucket kiln_inter_token_latency_seconds_count \
  kiln_request_latency_seconds_sum kiln_kv_cache_pages_free kiln_prompt_tokens_total; do
  grep -q "^$metric" "$dir/metrics" || fail "/metrics lacks $metric"
done
awk '$1 == "kiln_generation_tokens_total" && $2 > 0 {found=1} END {exit !found}' "$dir/metrics" ||
  fail "no generated tokens counted: $(grep generation "$dir/metrics")"

# SIGTERM while a stream runs: the stream still ends with [DONE], the server exits 0.
curl -sN "${auth[@]}" "${json[@]}" "$url/v1/completions" \
  -d '{"prompt": "Once upon a time", "max_tokens": 40, "ignore_eos": true, "stream": true}' >"$dir/drained" &
curl_pid=$!
for _ in $(seq 100); do grep -q '"text"' "$dir/drained" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$server_pid"
code=0
wait "$server_pid" || code=$?
server_pid=
[ "$code" = 0 ] || fail "kiln serve exited $code after SIGTERM"
wait "$curl_pid" || true
tail -c 200 "$dir/drained" | grep -q "data: \[DONE\]" || fail "the stream was cut by SIGTERM: $(tail -c 300 "$dir/drained")"
grep -q "draining" "$dir/server.err" || fail "no draining message"
echo "serve: all checks passed"
