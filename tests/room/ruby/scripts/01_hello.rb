puts "Hello, world"
print "no newline", "\n"
p 42
