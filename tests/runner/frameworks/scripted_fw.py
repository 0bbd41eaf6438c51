"""A subprocess framework for tests whose behaviour depends on the question id.

q1 answers; q2 reports usage then hangs; q3 crashes; q4 prints garbage; q5 prints an
answer object without an answer field; anything else answers.
"""

import json
import sys
import time

request = json.loads(sys.stdin.readline())
qid = request["question"]["id"]
docs = [d["source"] for d in request["documents"]]
if qid == "q2":
    print(json.dumps({"type": "usage", "prompt_tokens": 50, "completion_tokens": 7,
                      "cost_usd": 0.001, "model": "sub-m"}), flush=True)
    print(json.dumps({"type": "tool", "tool": "search", "arguments": {"q": "x"}}), flush=True)
    time.sleep(60)
if qid == "q3":
    print("Traceback: something broke", file=sys.stderr)
    sys.exit(3)
if qid == "q4":
    print("hello, this is not JSON")
    sys.exit(0)
if qid == "q5":
    print(json.dumps({"text_is_missing": True}))
    sys.exit(0)
print("log line that is not JSON")
print(json.dumps({"answer": f"answer to {request['question']['text']}", "sources": docs[:1],
                  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "model": "sub-m"},
                  "metadata": {"tool_trace": [{"tool": "t"}], "agents_used": ["a"]}}))
