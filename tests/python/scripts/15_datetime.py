import calendar
from datetime import date, datetime, timedelta, timezone

d = date(2024, 2, 28)
print(d + timedelta(days=1), d + timedelta(days=2), d.isoformat(), d.weekday(), d.strftime("%A %d %B %Y"))
dt = datetime(2023, 12, 31, 23, 59, 30, tzinfo=timezone.utc)
print(dt + timedelta(seconds=45), dt.timestamp(), dt.isoformat())
print(datetime.fromisoformat("2024-03-10T12:30:00+02:00").astimezone(timezone.utc))
print(datetime.strptime("05/06/2021 07:08", "%d/%m/%Y %H:%M"))
print((date(2025, 1, 1) - date(2024, 1, 1)).days, calendar.isleap(2100))
print(calendar.month(2024, 2))
print(datetime.fromtimestamp(0, timezone.utc), timedelta(days=1, seconds=3661))
