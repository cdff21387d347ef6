puts "before exit"
$stdout.flush
exit 3
puts "after exit"
