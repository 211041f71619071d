"""Study analysis: dataset statistics, the report with charts, session splits, merging files.

Pure computation over what the store returns; matplotlib is imported only when charts are
drawn (:mod:`annotate.analysis.charts`).
"""

# Here, not in session_split (numpy, pandas): the CLI's help shows it at every start-up.
MAX_EXHAUSTIVE = 10**6
"""Up to this many subsets per condition, split-sessions scores every one."""
