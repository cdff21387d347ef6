puts "calling"
nil.upcase
