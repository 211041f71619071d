"""Agreement and adjudication: from stored labels to agreement figures (`annotate agree`),
majority votes, the cases left to decide, and gold."""
