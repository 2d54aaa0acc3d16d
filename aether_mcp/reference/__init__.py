"""What runs in the reference worker and its children: the original UDF, loaded from verified bytes only."""
