#!/usr/bin/env python3
"""Checks a running `kiln serve` with the official OpenAI Python client (PyPI `openai`).

Optional and never run by CI (setup installs no Python packages). Use:

    python3 -m venv /tmp/openai-venv && /tmp/openai-venv/bin/pip install openai
    kiln serve --port 8080 --api-key KEY &
    /tmp/openai-venv/bin/python scripts/openai_client_check.py http://127.0.0.1:8080/v1 KEY

Exits 0 when the client's streaming and non-streaming calls work and the server's errors
surface as the client's usual exceptions.
"""
import sys

import openai


def main() -> int:
    base_url, key = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)

    models = client.models.list()
    model = models.data[0].id
    print(f"model: {model}")

    completion = client.completions.create(model=model, prompt="The capital of France is", max_tokens=8,
                                           temperature=0)
    text = completion.choices[0].text
    assert completion.usage.completion_tokens == 8, completion
    print(f"completion: {text!r}")

    streamed = "".join(chunk.choices[0].text for chunk in client.completions.create(
        model=model, prompt="The capital of France is", max_tokens=8, temperature=0, stream=True) if chunk.choices)
    assert streamed == text, (streamed, text)

    chat = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Say hello."}],
                                          max_tokens=16, temperature=0)
    answer = chat.choices[0].message.content
    assert chat.choices[0].message.role == "assistant" and answer, chat
    print(f"chat: {answer!r}")

    pieces, usage = [], None
    for chunk in client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Say hello."}],
                                                max_tokens=16, temperature=0, stream=True,
                                                stream_options={"include_usage": True}):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        if chunk.usage:
            usage = chunk.usage
    assert "".join(pieces) == answer, (pieces, answer)
    assert usage and usage.completion_tokens > 0, usage

    expect_error(openai.BadRequestError, lambda: client.completions.create(model=model, prompt="x", top_p=5))
    expect_error(openai.NotFoundError, lambda: client.completions.create(model="no-such-model", prompt="x"))
    wrong_key = openai.OpenAI(base_url=base_url, api_key=key + "-wrong", max_retries=0)
    expect_error(openai.AuthenticationError, lambda: wrong_key.models.list())
    print("openai client: all checks passed")
    return 0


def expect_error(kind, call):
    try:
        call()
    except kind as error:
        print(f"{kind.__name__}: {error.message}")
        return
    raise AssertionError(f"expected {kind.__name__}")


if __name__ == "__main__":
    sys.exit(main())
