"""What a task needs whether it reads or writes, under both `reading/` and `writing/` (which
import nothing of each other): its options (`options`: the Spark source's names, `offsets`), the
admin calls on its topics (`topic_metadata`), the columns of a message table (`columns`: what a
read gives and a write takes), what a worker keeps between tasks (`executor`,
`kept`: Pulsar clients, schemas), the schemas it reads into or writes with (`schemas`), and the
everyday CEL conditions judged over an Arrow batch (`conditions`: READ rules on a read, WRITE
rules on a write).
"""

__all__: list[str] = []
