"""Attribution: put a number on every cause of the gap between one model's scores under two harnesses.

Above ``lib.generation`` and ``lib.judging`` in the layers: a ladder step regenerates answers the way a harness
would (``lib.generation``) and judges them the way a harness would (``lib.judging``), both through the one
request path and request cache.

- ``judge``: a run's judge-side settings (``Setup``, ``setup_of``), the harness's judge templates
  (``combined_template``), stored and re-judged item scores, the paired delta with its t interval;
- ``ladder``: ``Attribution`` (prepare: the cost of every step on both endpoints before any call; run: the
  waterfall in one or both orders, a Shapley-style average over orders, the interactions), ``records``,
  ``STEP_LABELS``, ``STEP_MEANING`` (what each bar means, in plain words), ``NOTE``.
"""
