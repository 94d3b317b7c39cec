"""irontune_record: writes the calls an IRON application tunes as irontune's `.rec`.

Runs beside IRON (`python3 -m irontune_record APP --out model.rec`). It asks
IRON for an application's model the way `python -m iron.lm.tune APP` does
(`iron.lm.tune.application_model`), lets the model add its own flags and plan
its calls (`tune_arguments`, `tune_calls`), and writes those calls -- their
graphs, operators, per-call values, points and contents -- as one
`irontune.v1.Calls` message. docs/recording-format.md ("Recording from
IRON") describes what is recorded and the IRON surface it reads.
"""
