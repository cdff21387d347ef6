puts defined?($peri_leak).inspect, $peri_leak.inspect
puts defined?(PERI_LEAK_CONST).inspect
puts "".respond_to?(:peri_leak)
puts ENV["PERI_LEAK"].inspect
puts $LOAD_PATH.include?("/peri-leak")
puts File.exist?("/tmp/peri_leak.txt")
puts "clean"
