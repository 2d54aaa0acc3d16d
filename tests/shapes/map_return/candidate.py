import pandas as pd

TARGET = "vectorized"


def evaluate(text):
    # Python's lower() and split(), per word, through pandas' Python-string methods
    words = text.astype(pd.StringDtype("python")).str.lower().str.split().explode().dropna()
    counts = words.groupby([words.index, words.values], sort=False).size()
    result = pd.Series([{} for _ in range(len(text))], index=text.index, dtype="object")
    for (row, word), count in counts.items():
        result[row][word] = int(count)
    return result.where(text.notna(), None).reset_index(drop=True)
