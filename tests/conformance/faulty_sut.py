"""The simulation behind the driver protocol, misbehaving at the Nth step it is asked to take:
``python faulty_sut.py MODE N [ONCE_FILE [STARTS_FILE]]``. MODE: crash (exits), hang (stops
answering), garbage (answers a line that is not JSON), bad-state (a state with a string HW),
internal (answers the implementation's internal error). With ONCE_FILE it misbehaves only while
that file is missing (creating it), so a restarted process behaves. With STARTS_FILE each process
appends a line there as it starts, so a test counts the processes started."""

import json
import os
import sys
import time
from pathlib import Path

from isrcheck.impl.sut.server import Session, encode

mode, at = sys.argv[1], int(sys.argv[2])
once = Path(sys.argv[3]) if len(sys.argv) > 3 else None
if len(sys.argv) > 4:
    with open(sys.argv[4], "a", encoding="utf-8") as starts:
        starts.write(f"{os.getpid()}\n")
session, steps = Session(), 0
for line in sys.stdin.buffer:
    request = json.loads(line)
    misbehave = False
    if request.get("op") == "step":
        steps += 1
        misbehave = steps == at and not (once and once.exists())
        if misbehave:
            if once:
                once.write_text("done")
            if mode == "crash":
                print("crashing on purpose", file=sys.stderr, flush=True)
                os._exit(3)
            if mode == "hang":
                time.sleep(600)
            if mode == "garbage":
                sys.stdout.buffer.write(b"this is not json\n")
                sys.stdout.flush()
                continue
            if mode == "internal":
                sys.stdout.buffer.write(encode({"ok": False, "error": "internal", "message": "boom"}))
                sys.stdout.flush()
                continue
    answer, done = session.answer(line)
    if mode == "bad-state" and misbehave and "state" in answer:
        answer["state"]["replicas"][1]["hw"] = "high"
    sys.stdout.buffer.write(encode(answer))
    sys.stdout.flush()
    if done:
        break
