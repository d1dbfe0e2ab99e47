"""Schemathesis hooks for scripts/test.sh: how the API's event streams are read.

Our OpenAPI document, like the reference's, describes a `text/event-stream` answer by the JSON that each
event's `data:` line carries (`TurnStreamingEvent`). Schemathesis reads the schema of an OpenAPI 3.1 event
stream as describing the parsed event record (`{"data": "...", "id": "..."}`) instead, and so would judge
every frame as failing. This deserializer hands it the JSON payloads, so the schema check tests what the
document states. Comment lines (`: ping` heartbeats) carry no event.
"""

import json

import schemathesis


@schemathesis.deserializer("text/event-stream")
def event_payloads(_ctx, response):
    events = []
    data = []
    for line in response.content.decode("utf-8").splitlines():
        if line == "":
            if data:
                events.append(json.loads("\n".join(data)))
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        events.append(json.loads("\n".join(data)))
    return events
