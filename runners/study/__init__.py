"""``vrforge study``: human studies in the browser (TACIT choice and drawing, CF-Eval ratings, drift ratings)."""
