# Changes as much global state as it can; 29_leak_check.rb (the next run) must not see any.
$peri_leak = "leaked"
PERI_LEAK_CONST = 1
class String
  def peri_leak = "leaked"
end
ENV["PERI_LEAK"] = "1"
$LOAD_PATH.unshift("/peri-leak")
require 'set'
Dir.mkdir("/tmp") rescue nil
File.write("/tmp/peri_leak.txt", "leaked")
srand(42)
puts rand(1000)
ObjectSpace.each_object(Class).first
GC.start
puts "set"
