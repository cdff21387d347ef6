puts "working"
abort("fatal: cannot continue")
