warn "a warning"
$stderr.puts "to stderr"
STDERR.print "raw\n"
puts "stdout line"
exit 0
