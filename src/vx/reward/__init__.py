"""vx as the reward of an RL trainer: a task's group of completions graded together at the speed of the grader.

:mod:`.grader` grades groups (peer ops compare a group's completions) on worker processes that concurrent
groups share, with a verdict cache in memory, a per-group deadline that turns what is not graded in time into
an abstention with its reason, and the tasks prepared once (``warm``). :mod:`.tasks` finds the task a
trainer's completion answers from the id the trainer carries (a task id, a data source and an index, or
the prompt's text). :mod:`.shapes` reads and writes the request and response bodies of the trainers'
reward calls (OpenRLHF's remote reward model, verl's reward functions) as plain data. ``vx serve`` and the
trainer adapters of :mod:`vx.integrations` are built on these; nothing here needs a web framework.
"""
