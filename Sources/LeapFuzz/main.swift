// leap-fuzz: bounded-time mutation fuzzing of every parser. Usage: leap-fuzz <target> [seconds]
print("usage: leap-fuzz <target> [seconds]")
