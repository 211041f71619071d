"""Study analysis: dataset statistics, the report with charts, session splits, merging files.

Pure computation over what the store returns; matplotlib is imported only when charts are
drawn (:mod:`annotate.analysis.charts`).
"""
