"""The page of an experiment run: one self-contained HTML file. A row per experiment (the model's
prediction for the cluster's variant, the repetitions that reached the aimed state and gave the
predicted outcome, the verdict), then a section per experiment with each repetition: its outcomes,
the anomalies with the operations that prove them (history indexes), its steps and their times."""

from __future__ import annotations

from isrcheck.conformance.reports.page import document, h, table


def render_experiment_page(doc: dict) -> str:
    rows = [
        [
            h(e["experiment"]),
            h(e["cluster"]),
            h(f"{e['prediction']['variant']}: {e['prediction']['verdict']}"),
            h(", ".join(e["prediction"]["outcomes"]) or "nothing"),
            h(" | ".join(", ".join(r["outcomes"]) or "nothing" for r in e["repetitions"])),
            h(f"{e['reached']}/{len(e['repetitions'])}"),
            h(f"{e['predicted']}/{len(e['repetitions'])}"),
            h(e["verdict"]),
        ]
        for e in doc["experiments"]
    ]
    body = [
        f"<h1>Experiments</h1><p><code>{h(doc.get('command', ''))}</code></p>",
        table(
            [
                "experiment",
                "cluster",
                "model",
                "predicted",
                "cluster did (per repetition)",
                "reached",
                "predicted",
                "verdict",
            ],
            rows,
        ),
    ]
    for e in doc["experiments"]:
        body.append(f'<h2 id="{h(e["experiment"])}">{h(e["experiment"])} on {h(e["cluster"])}</h2>')
        body.append(
            f"<p>schedule <code>{h(e['schedule'])}</code>; model ({h(e['prediction']['variant'])}): "
            f"{h(e['prediction']['verdict'])}; predicted: {h(', '.join(e['prediction']['outcomes']) or 'nothing')} "
            f"({h(e['prediction']['source'])})</p>"
        )
        for r in e["repetitions"]:
            state = "reached" if r["reached"] else f"not reached: {r['missed']}"
            body.append(
                f"<h3>repetition {r['index'] + 1}: {h(', '.join(r['outcomes']) or 'nothing')} "
                f"({h(state)}, {r['seconds']} s)</h3>"
            )
            anomalies = [
                [h(name), h(" ".join(map(str, i["ops"]))), h(i["explanation"])]
                for name, instances in r["anomalies"].items()
                for i in instances
            ]
            if anomalies:
                body.append(table(["anomaly", "operations", "explanation"], anomalies))
            body.append(
                table(
                    ["step", "at s", "brokers", "seconds", "note"],
                    [
                        [
                            h(s["step"]),
                            h(s["at_s"]),
                            h(s.get("nodes", "")),
                            h(s["seconds"]),
                            h(s.get("missed") or s.get("sends") or s.get("read_to", "")),
                        ]
                        for s in r["steps"]
                    ],
                )
            )
    return document("isrcheck experiments", "\n".join(body))


__all__ = ["render_experiment_page"]
