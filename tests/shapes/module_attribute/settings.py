MIN_AGE = 18
MAX_AGE = 65
OUTPUT = "s3://bucket/bands"
