"""Project-wide facts: which functions sync, what they return, what classes hold, across files.

A one-file linter cannot see that `meta.seq_lens_cpu` is a property, defined three modules
away, whose getter copies a device tensor to the host (vLLM PR #40654). So every checked
file also yields a `ModuleSummary`, built from the same traversal and the same rules' reports
that produce its findings, never by rules written twice, and depending on that file alone;
`ProjectIndex` joins the summaries, solves them once, and gives each file the `Answers` it uses
from other files. One job per module:

    placement  where a file sits: its module name, its package, the package root
    facts      the plain data: summaries, chains, facts, answers (no libcst: they travel
               between processes and live in the cache; the device model reads them)
    summaries  one file's summary, taken from the walk that finds its findings
    index      the summaries joined and solved once, to a fixpoint over the call graph
    demand     which files of a package a run over some of them must summarize
    text_facts what a package's text says that its summaries do not (multimodal fields kept on the CPU)
    run        a run with project analysis: first looks, one solve, second looks with the answers
"""
